"""Prices are integer cents. Discount codes take a percentage off a cart
total; tax is added after the discount and rounded half up to the cent."""

PRICES = {"apple": 120, "pear": 95, "melon": 450}
DISCOUNTS = {"WELCOME10": 10, "STAFF": 30, "CLEARANCE": 150}
TAX_RATE = 0.0825


def price_of(sku):
    """The unit price of `sku`, in cents."""
    return PRICES[sku]


def apply_discount(total_cents, code):
    """`total_cents` with discount `code` taken off (unknown codes: none)."""
    percent = DISCOUNTS.get(code, 0)
    return total_cents - total_cents * percent // 100


def with_tax(cents):
    """`cents` plus tax, rounded half up to the cent."""
    return round(cents * (1 + TAX_RATE))
