"""The payment gateway client. The gateway takes amounts in dollars (a
float) and deduplicates charges that carry the same idempotency key."""

import uuid


class PaymentError(Exception):
    pass


def charge(gateway, card, amount_dollars, attempts=3):
    """Charge `amount_dollars` to `card`, retrying transient failures."""
    key = str(uuid.uuid4())
    last = None
    for _ in range(attempts):
        try:
            return gateway.charge(card=card, amount=amount_dollars, idempotency_key=key)
        except ConnectionError as err:
            last = err
            continue
    raise PaymentError(f"charge failed after {attempts} attempts: {last}")
