"""Checkout: hold the stock, charge the card, record the order."""

from shop.payments import PaymentError, charge

ORDERS = []


def checkout(cart, inventory, gateway, card, code=None):
    """Check `cart` out; the order, or None when stock or payment fails."""
    for sku, quantity in cart.items.items():
        if not inventory.hold(sku, quantity):
            return None
    amount = cart.total(code)
    try:
        receipt = charge(gateway, card, amount)
    except PaymentError:
        return None
    for sku, quantity in cart.items.items():
        inventory.commit(sku, quantity)
    order = {"id": len(ORDERS) + 1, "lines": dict(cart.items), "paid": amount,
             "receipt": receipt}
    ORDERS.append(order)
    return order
