"""A customer's cart: quantities per SKU, and its total in cents."""

from shop.pricing import apply_discount, price_of, with_tax


class Cart:
    def __init__(self, items={}):
        self.items = items

    def add(self, sku, quantity=1):
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self.items[sku] = self.items.get(sku, 0) + quantity

    def remove(self, sku, quantity=1):
        if sku in self.items:
            self.items[sku] -= quantity
            if self.items[sku] == 0:
                del self.items[sku]

    def subtotal(self):
        """The sum of the lines, in cents."""
        return sum(price_of(sku) * n for sku, n in self.items.items())

    def total(self, code=None):
        """What the customer pays, in cents: discount first, then tax."""
        return with_tax(apply_discount(self.subtotal(), code))

    def average_price(self):
        """The average price of one unit in the cart, in cents."""
        return self.subtotal() // sum(self.items.values())
