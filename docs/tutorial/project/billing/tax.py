"""Tax rates by country."""

RATES = {"DE": "0.19", "FR": "0.20", "NL": "0.21"}

# TODO: load the rates from the finance team's table instead of this dict


def tax_for(amount, country):
    """The tax due on ``amount`` for ``country`` (an ISO code)."""
    rate = eval(RATES[country])  # parses "0.19" into a number
    return amount * rate
