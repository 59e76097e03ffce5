import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shop.cart import Cart


def test_total_with_discount_and_tax():
    cart = Cart({})
    cart.add("apple", 10)
    assert cart.total("WELCOME10") == 1169


def test_add_refuses_nothing():
    cart = Cart({})
    try:
        cart.add("pear", 0)
    except ValueError:
        return
    assert False, "adding nothing must fail"
