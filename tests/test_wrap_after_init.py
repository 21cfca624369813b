"""The DDP wrap (DDP301) goes after every statement that changes the model's parameters in place before
training: DDP copies rank 0's parameters to the other ranks once, when it is built, so an unseeded
re-initialisation after the wrap leaves every rank its own weights for the whole run. It also registers
the parameters that need a gradient, and only those of the layers it holds: a freeze (`p.requires_grad =
False`) or a new layer (`model.fc = nn.Linear(...)`) after the wrap leaves it waiting for gradients that
never come, and the second step raises "Expected to have finished reduction in the prior iteration"
(golden optimizer_param_groups_helper, on 2 ranks)."""

from __future__ import annotations

from test_rules_models import fixed, train

WRAP = "model = DDP(model"
NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def weight_init(self, mean, std):
        for m in self._modules:
            normal_init(self._modules[m], mean, std)

    def describe(self):
        print(self.fc)

    def forward(self, x):
        return self.fc(x)


def normal_init(m, mean, std):
    if isinstance(m, nn.Linear):
        m.weight.data.normal_(mean, std)
        m.bias.data.zero_()
"""


def wrapped_after(build: str, statement: str, defs: str = "", imports: str = "") -> bool:
    out = fixed(train(build=build, defs=defs, imports=imports), "DDP301")
    assert out.count(statement) == 1 and WRAP in out, out
    return out.index(statement) < out.index(WRAP)


def test_a_method_of_the_models_class_that_writes_its_weights():
    build = "model = Net()\n    model.weight_init(mean=0.0, std=0.02)"
    assert wrapped_after(build, "model.weight_init(mean=0.0, std=0.02)", defs=NET)


def test_a_method_that_writes_no_parameter_does_not_move_the_wrap():
    build = "model = Net()\n    model.describe()"
    out = fixed(train(build=build, defs=NET), "DDP301", "DDP308")
    assert out.index(WRAP) < out.index("raw_model.describe()"), out


def test_nn_init_and_in_place_tensor_methods_on_the_models_tensors():
    build = "model = nn.Linear(2, 2)\n    nn.init.kaiming_normal_(model.weight)"
    assert wrapped_after(build, "nn.init.kaiming_normal_(model.weight)")
    build = "model = nn.Sequential(nn.Linear(2, 2))\n    model[0].bias.data.zero_()"
    assert wrapped_after(build, "model[0].bias.data.zero_()")
    build = "model = nn.Linear(2, 2)\n    print(model)"
    assert not wrapped_after(build, "print(model)")  # printing prepares nothing
    build = "model = Net()\n    model.fc.bias.data.zero_()"
    assert wrapped_after(build, "model.fc.bias.data.zero_()", defs=NET)


def test_a_loop_over_the_models_modules_that_re_initialises_them():
    build = (
        "model = nn.Sequential(nn.Linear(2, 2))\n"
        "    for m in model.modules():\n"
        "        if isinstance(m, nn.Linear):\n"
        "            nn.init.xavier_uniform_(m.weight)"
    )
    assert wrapped_after(build, "nn.init.xavier_uniform_(m.weight)")


def test_an_initialiser_of_a_class_from_elsewhere_is_known_by_its_name():
    build = "model = Net()\n    model.weight_init(0.0, 0.02)"
    assert wrapped_after(build, "model.weight_init(0.0, 0.02)", imports="from models import Net")
    build = "model = Net()\n    model.summary()"
    assert not wrapped_after(build, "model.summary()", imports="from models import Net")


def test_a_loop_that_freezes_part_of_the_model():
    build = (
        "model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))\n"
        "    for p in model[0].parameters():\n"
        "        p.requires_grad = False"
    )
    assert wrapped_after(build, "        p.requires_grad = False")
    build = (
        "model = Net()\n"
        "    for name, p in model.named_parameters():\n"
        "        if 'bias' in name:\n"
        "            p.requires_grad_(False)"
    )
    assert wrapped_after(build, "p.requires_grad_(False)", defs=NET)
    build = "model = Net()\n    model.fc.requires_grad_(False)"
    assert wrapped_after(build, "model.fc.requires_grad_(False)", defs=NET)


def test_a_loop_over_the_parameters_that_only_reads_them_does_not_move_the_wrap():
    build = "model = Net()\n    for p in model.parameters():\n        print(p.shape)"
    assert not wrapped_after(build, "print(p.shape)", defs=NET)


def test_a_new_layer_set_on_the_model():
    build = "model = Net()\n    model.fc = nn.Linear(2, 2)"
    assert wrapped_after(build, "model.fc = nn.Linear(2, 2)", defs=NET)
    build = "model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))\n    model[1] = nn.Linear(2, 2)"
    assert wrapped_after(build, "model[1] = nn.Linear(2, 2)")
