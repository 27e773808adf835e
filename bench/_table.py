"""The benchmark scripts' tables: a header line and its rule."""


def print_header(header: str) -> str:
    """Print a table's header and the rule under it; returns the rule, for the table's foot."""
    rule = "-" * len(header)
    print(header)
    print(rule)
    return rule
