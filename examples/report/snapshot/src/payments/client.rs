//! The client for the card processor's payment API.
//!
//! `PaymentClient::submit` sends one payment and returns the processor's
//! receipt. A request that times out is sent again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::PaymentsConfig;
use crate::payments::idempotency::IdempotencyKey;
use crate::payments::{Payment, Receipt};

/// What the processor answers when a payment is accepted.
#[derive(Debug, Deserialize)]
struct Accepted {
    id: String,
    status: String,
}

/// What we send for one payment.
#[derive(Debug, Serialize)]
struct Request<'a> {
    amount_minor: u64,
    currency: &'a str,
    source: &'a str,
    reference: &'a str,
}

/// Why a payment could not be submitted.
#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error("the processor refused the payment: {0}")]
    Refused(String),
    #[error("cannot reach the processor: {0}")]
    Transport(#[from] reqwest::Error),
}

/// A client bound to one processor account.
pub struct PaymentClient {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
    timeout: Duration,
}

impl PaymentClient {
    /// A client for the processor named in `config`.
    pub fn new(config: &PaymentsConfig, api_key: String) -> PaymentClient {
        PaymentClient {
            http: reqwest::Client::new(),
            base_url: config.upstream.base_url.clone(),
            api_key,
            timeout: Duration::from_millis(config.request.timeout_ms),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{}", self.base_url, path)
    }

    fn body<'a>(payment: &'a Payment) -> Request<'a> {
        Request {
            amount_minor: payment.amount_minor,
            currency: &payment.currency,
            source: &payment.source,
            reference: &payment.reference,
        }
    }

    fn receipt(accepted: Accepted) -> Receipt {
        Receipt {
            processor_id: accepted.id,
            status: accepted.status,
        }
    }

    fn refused(status: reqwest::StatusCode, text: String) -> SubmitError {
        SubmitError::Refused(format!("{status}: {text}"))
    }

    /// Send `payment` to the processor and wait for its receipt.
    ///
    /// A request that times out is sent again.
    pub async fn submit(&self, payment: &Payment) -> Result<Receipt, SubmitError> {
        let body = Self::body(payment);
        let url = self.url("payments");
        loop {
            // One attempt: a request that does not answer within the
            // timeout is abandoned and the loop sends another.
            //
            // The processor treats two requests with the same key as the
            // same payment.
            let key = IdempotencyKey::new();
            let sent = self
                .http
                .post(&url)
                .bearer_auth(&self.api_key)
                .header("Idempotency-Key", key.as_str())
                .timeout(self.timeout)
                .json(&body)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                Err(err) if err.is_timeout() => continue,
                Err(err) => return Err(err.into()),
            };
            if !response.status().is_success() {
                let status = response.status();
                return Err(Self::refused(status, response.text().await?));
            }
            return Ok(Self::receipt(response.json().await?));
        }
    }
}
