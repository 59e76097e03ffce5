//! The one HTTP client of okstra: `okstra publish` talking to a REST API.
//!
//! ureq with rustls on the ring provider and the bundled web-PKI roots (no
//! OpenSSL, no platform verifier). Nothing here runs before `publish` asks:
//! the TLS configuration is built when the first request is made, so no
//! other command (provider-exec above all, whose start-up is benchmarked)
//! pays for it.
//!
//! The rules it keeps:
//! - the base URL is `https://…`, or plain `http://` only to a loopback host
//!   (tests, a local proxy);
//! - the token goes in the `Authorization` header of requests to the base's
//!   own origin and nowhere else: redirects are not followed by ureq; a
//!   redirect to the same origin is followed here (at most
//!   [`MAX_REDIRECTS`]), one to another origin is refused;
//! - answers are read up to [`MAX_BODY_BYTES`]; every request has a deadline;
//! - the token is never printed or written: every text from the server (or
//!   from a run) that okstra prints or sends passes [`Client::redact`],
//!   which writes [`REDACTED`] in its place (a server or proxy may quote a
//!   request's `Authorization` header back in its message).

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use ureq::http::Uri;

/// Most bytes of one answer okstra reads (a page of 100 reviews or files).
const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;
/// Same-origin redirects followed per request.
const MAX_REDIRECTS: u32 = 3;
/// Deadline of one request, answer included.
const TIMEOUT: Duration = Duration::from_mins(1);
/// What stands for the token in any text okstra prints or sends (as CI
/// logs mask a secret).
pub const REDACTED: &str = "***";

/// A checked API base: scheme, host and port, and its path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// `https://api.github.com` or `http://127.0.0.1:8080/api/v3`, no
    /// trailing slash.
    url: String,
    origin: String,
    loopback: bool,
}

impl Base {
    /// Check `--api-url`.
    pub fn parse(raw: &str) -> Result<Base> {
        let trimmed = raw.trim_end_matches('/');
        let uri: Uri = trimmed.parse().map_err(|_| {
            anyhow::anyhow!(
                "invalid `--api-url` `{raw}`: expected a URL such as `https://api.github.com`"
            )
        })?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            bail!("invalid `--api-url` `{raw}`: expected a URL such as `https://api.github.com`");
        };
        if uri.query().is_some() || authority.as_str().contains('@') {
            bail!("invalid `--api-url` `{raw}`: it may not carry a query or credentials");
        }
        let loopback = is_loopback(authority.host());
        match scheme {
            "https" => {}
            "http" if loopback => {}
            "http" => bail!(
                "invalid `--api-url` `{raw}`: plain http is allowed only to a loopback host; \
                 use https"
            ),
            other => bail!("invalid `--api-url` `{raw}`: scheme `{other}` is not https"),
        }
        Ok(Base {
            url: trimmed.to_owned(),
            origin: format!("{scheme}://{}", authority.as_str().to_ascii_lowercase()),
            loopback,
        })
    }

    /// The URL of `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }
}

/// Whether `host` is a loopback name or address.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// One answer: its status and JSON body (`Null` when empty or not JSON).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

/// A client for one API base and one token.
pub struct Client {
    agent: ureq::Agent,
    base: Base,
    token: Option<String>,
}

impl Client {
    pub fn new(base: Base, token: Option<String>) -> Client {
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .timeout_global(Some(TIMEOUT))
            .user_agent(concat!("okstra/", env!("CARGO_PKG_VERSION")));
        if base.loopback {
            // A proxy from the environment must not see loopback traffic.
            config = config.proxy(None);
        }
        Client {
            agent: config.build().into(),
            base,
            token,
        }
    }

    pub fn base(&self) -> &Base {
        &self.base
    }

    /// `text` with every occurrence of the token replaced by [`REDACTED`].
    pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        match &self.token {
            Some(token) if !token.is_empty() && text.contains(token.as_str()) => {
                std::borrow::Cow::Owned(text.replace(token.as_str(), REDACTED))
            }
            _ => std::borrow::Cow::Borrowed(text),
        }
    }

    /// [`Client::redact`] every string (and key) of `value`.
    pub fn redact_json(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let std::borrow::Cow::Owned(clean) = self.redact(text) {
                    *text = clean;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(map) => {
                let dirty: Vec<String> = map
                    .keys()
                    .filter(|key| matches!(self.redact(key), std::borrow::Cow::Owned(_)))
                    .cloned()
                    .collect();
                for key in dirty {
                    if let Some(item) = map.remove(&key) {
                        map.insert(self.redact(&key).into_owned(), item);
                    }
                }
                map.values_mut().for_each(|item| self.redact_json(item));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Result<Answer> {
        self.send("GET", path, None)
    }

    /// `POST path` with a JSON body.
    pub fn post(&self, path: &str, body: &Value) -> Result<Answer> {
        self.send("POST", path, Some(body))
    }

    fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Answer> {
        let mut url = self.base.url(path);
        for _ in 0..=MAX_REDIRECTS {
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(&url)
                .header("Accept", "application/vnd.github+json")
                .header("X-GitHub-Api-Version", "2022-11-28");
            if let Some(token) = &self.token {
                request = request.header("Authorization", format!("Bearer {token}"));
            }
            let built =
                |err| anyhow::anyhow!("cannot build the request to `{}`: {err}", shown(&url));
            let sent = match body {
                Some(value) => {
                    let payload =
                        serde_json::to_vec(value).context("cannot serialise the request")?;
                    let request = request
                        .header("Content-Type", "application/json")
                        .body(payload)
                        .map_err(built)?;
                    self.agent.run(request)
                }
                None => self.agent.run(request.body(()).map_err(built)?),
            };
            let mut response =
                sent.with_context(|| format!("{method} `{}` failed", shown(&url)))?;
            let status = response.status().as_u16();
            if (300..400).contains(&status) {
                let location = response
                    .headers()
                    .get("location")
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                url = self.redirect(&url, &location)?;
                continue;
            }
            let bytes = response
                .body_mut()
                .with_config()
                .limit(MAX_BODY_BYTES)
                .read_to_vec()
                .with_context(|| format!("cannot read the answer of `{}`", shown(&url)))?;
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            return Ok(Answer { status, body });
        }
        bail!(
            "`{}` redirected more than {MAX_REDIRECTS} times",
            shown(&self.base.url(path))
        )
    }

    /// Where a redirect from `from` to `location` goes, when it stays on
    /// the base's origin (the token is never sent anywhere else).
    fn redirect(&self, from: &str, location: &str) -> Result<String> {
        let target = if location.starts_with('/') {
            format!("{}{location}", self.base.origin)
        } else {
            location.to_owned()
        };
        let same_origin = target
            .parse::<Uri>()
            .ok()
            .and_then(|uri| Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?)))
            .is_some_and(|origin| origin.eq_ignore_ascii_case(&self.base.origin));
        if !same_origin {
            bail!(
                "`{}` redirected to another host (`{}`); okstra does not send the token there",
                shown(from),
                crate::fsread::escape(&crate::fsread::clip(&self.redact(location), 200))
            );
        }
        Ok(target)
    }
}

/// A URL for messages (no query string: it never holds the token, but
/// pages and filters are noise).
fn shown(url: &str) -> String {
    crate::fsread::escape(url.split('?').next().unwrap_or(url)).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases_are_https_or_loopback_http() {
        let github = Base::parse("https://api.github.com/").unwrap();
        assert_eq!(github.url("/repos/a/b"), "https://api.github.com/repos/a/b");
        assert!(!github.loopback);
        let ghe = Base::parse("https://ghe.acme.dev/api/v3").unwrap();
        assert_eq!(ghe.url("/x"), "https://ghe.acme.dev/api/v3/x");
        for local in [
            "http://127.0.0.1:8080",
            "http://localhost:1/api",
            "http://[::1]:9",
        ] {
            assert!(Base::parse(local).unwrap().loopback, "{local}");
        }
        for bad in [
            "http://api.github.com",
            "http://10.0.0.1",
            "ftp://x",
            "api.github.com",
            "https://user:pw@x.dev",
            "https://x.dev/?a=b",
            "",
        ] {
            assert!(Base::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_is_redacted_from_text_and_json() {
        let client = Client::new(
            Base::parse("https://api.github.com").unwrap(),
            Some("ghp_secret".into()),
        );
        assert_eq!(
            client.redact("Bearer ghp_secret refused; ghp_secret again"),
            "Bearer *** refused; *** again"
        );
        assert!(matches!(
            client.redact("nothing here"),
            std::borrow::Cow::Borrowed(_)
        ));
        let mut body = serde_json::json!({
            "body": "a finding quoting ghp_secret",
            "comments": [{"body": "x ghp_secret", "line": 3}],
            "ghp_secret": true
        });
        client.redact_json(&mut body);
        assert!(!body.to_string().contains("ghp_secret"), "{body}");
        assert_eq!(body["comments"][0]["body"], "x ***");
        let anonymous = Client::new(Base::parse("https://api.github.com").unwrap(), None);
        assert_eq!(anonymous.redact("ghp_secret"), "ghp_secret");
    }

    #[test]
    fn the_token_follows_no_redirect_to_another_origin() {
        let client = Client::new(
            Base::parse("https://api.github.com").unwrap(),
            Some("secret".into()),
        );
        assert_eq!(
            client
                .redirect("https://api.github.com/a", "/repositories/1/pulls/2")
                .unwrap(),
            "https://api.github.com/repositories/1/pulls/2"
        );
        assert_eq!(
            client
                .redirect("https://api.github.com/a", "https://API.github.com/b")
                .unwrap(),
            "https://API.github.com/b"
        );
        let err = client
            .redirect("https://api.github.com/a", "https://evil.example/b")
            .unwrap_err()
            .to_string();
        assert!(err.contains("another host"), "{err}");
        assert!(!err.contains("secret"));
        // A location quoting the token is shown without it.
        let err = client
            .redirect("https://api.github.com/a", "https://evil.example/?t=secret")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret") && err.contains("t=***"), "{err}");
        assert!(
            client
                .redirect("https://api.github.com/a", "http://api.github.com/b")
                .is_err()
        );
    }
}
