"""Stack config, catalogs and the assembly of the kaito-aks program."""
