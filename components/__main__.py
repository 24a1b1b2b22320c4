"""Entry point of the component provider (kaito_aks/provider.py), what PulumiPlugin.yaml runs. From
a checkout or a git source the package is the kaito_aks folder beside this file; when kaito-aks
is pip-installed it is found on sys.path as usual."""

import sys
from pathlib import Path

here = Path(__file__).resolve().parent
if (here / "kaito_aks" / "__init__.py").is_file():
    sys.path.insert(0, str(here))

from kaito_aks.provider import main  # noqa: E402

main()
