import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from inventory import Inventory


def test_reserve_within_stock():
    inventory = Inventory({"apple": 2})
    assert inventory.reserve("apple", 2)
    assert not inventory.reserve("apple", 1)
