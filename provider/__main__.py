"""Entry point of the component provider (see kaito_aks/provider.py). From a checkout or a git
source the package is the kaito_aks folder beside this one; when kaito-aks is pip-installed it
is found on sys.path as usual."""

import sys
from pathlib import Path

checkout = Path(__file__).resolve().parent.parent
if (checkout / "kaito_aks" / "__init__.py").is_file():
    sys.path.insert(0, str(checkout))

from kaito_aks.provider import main  # noqa: E402

main()
