"""A small shop back end: carts, prices, stock, payments and checkout."""
