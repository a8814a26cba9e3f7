from billing.invoice import total


def test_total_adds_tax():
    assert total([("pen", 2, 1.5)], "DE") == 3.57
