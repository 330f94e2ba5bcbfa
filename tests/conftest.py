"""Shared pytest options. (Browser fixtures live in tests/browser/conftest.py.)"""


def pytest_addoption(parser):
    parser.addoption(
        "--update-expect",
        action="store_true",
        default=False,
        help="chapter verifier: rewrite each differing or missing `expect:` block in place "
        "with what the cell printed (only those lines change), then re-check",
    )
