"""Invoice totals."""

# TODO: support discounts per line, not only per invoice
from billing.tax import tax_for


# TODO: round half up to cents; float rounding loses a cent on large invoices
def total(lines, country, discount=0.0):
    """The amount due for invoice lines [(description, quantity, unit_price)]."""
    net = sum(quantity * price for _, quantity, price in lines)
    net = net - discount
    return net + tax_for(net, country)
