"""toolkit.money: tariffs, rentals, schedule, ledger, settlement."""
