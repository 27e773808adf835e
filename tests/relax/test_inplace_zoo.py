"""DataflowUseInplaceCalls on the architectures users deploy: in TVM's own pipeline, the bytes
StaticPlanBlockMemory plans after our pass are never more than after the stock pass or after no
in-place pass at all (the bench prints the same comparison as ratios)."""

import pytest
import tvm

from tvm_memplan.analysis import planned_storage
from tvm_memplan.transform import DataflowUseInplaceCalls
from zoo import models

# The zoo, and smaller inputs or widths of the nets where an earlier version planned more.
CASES = dict(models.ZOO) | {
    "mnasnet_32": lambda: models._export(models.MnasNet(), (1, 3, 32, 32)),
    "unet_w4_16": lambda: models._export(models.UNet(width=4), (1, 3, 16, 16)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ours_never_plans_more_than_stock_or_none(name):
    mod, _ = CASES[name]()
    none = planned_storage(mod).total_bytes
    stock = planned_storage(tvm.relax.transform.DataflowUseInplaceCalls()(mod)).total_bytes
    ours = planned_storage(DataflowUseInplaceCalls()(mod)).total_bytes
    assert ours <= stock, f"{name}: ours {ours} > stock {stock}"
    assert ours <= none, f"{name}: ours {ours} > no in-place {none}"
