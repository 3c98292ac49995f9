"""SharedAdam / SharedRMSprop: torch.optim's updates, and state shared across forked processes."""

from __future__ import annotations

import pytest
import torch
import torch.multiprocessing as mp
from torch.testing import assert_close

from a3c.config.settings import Config
from a3c.learn.optim import (
    SharedAdam,
    SharedRMSprop,
    adam_ratio_bound,
    budget_used,
    current_lr,
    linear_decay,
    make_optimizer,
)

TIGHT = {"rtol": 1e-6, "atol": 1e-8}  # the implementations should agree to rounding, if not exactly


def initial_params() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(123)
    return [torch.randn(3, 4, generator=generator), torch.randn(5, generator=generator)]


def gradient_sequence(steps: int) -> list[list[torch.Tensor]]:
    generator = torch.Generator().manual_seed(7)
    return [[torch.randn(3, 4, generator=generator), torch.randn(5, generator=generator)] for _ in range(steps)]


def run_both(shared_cls, shared_kwargs, torch_cls, torch_kwargs, steps=20, lrs=None):
    ours = [p.clone() for p in initial_params()]
    theirs = [p.clone().requires_grad_() for p in initial_params()]
    shared = shared_cls(ours, **shared_kwargs)
    reference = torch_cls(theirs, **torch_kwargs)
    for k, grads in enumerate(gradient_sequence(steps)):
        lr = None if lrs is None else lrs[k]
        shared.step([g.clone() for g in grads], lr=lr)
        for param, grad in zip(theirs, grads):
            param.grad = grad.clone()
        if lr is not None:
            reference.param_groups[0]["lr"] = lr
        reference.step()
    return shared, ours, reference, theirs


def test_shared_adam_matches_torch_adam_over_20_steps():
    shared, ours, reference, theirs = run_both(SharedAdam, {"lr": 1e-2}, torch.optim.Adam, {"lr": 1e-2})
    for mine, start, ref in zip(ours, initial_params(), theirs):
        assert not torch.equal(mine, start)  # the steps did move the parameters
        assert_close(mine, ref.detach(), **TIGHT)
    for i, ref in enumerate(theirs):
        state = reference.state[ref]
        assert_close(shared.state["exp_avg"][i], state["exp_avg"], **TIGHT)
        assert_close(shared.state["exp_avg_sq"][i], state["exp_avg_sq"], **TIGHT)
        assert float(shared.steps) == float(state["step"]) == 20


def test_shared_adam_matches_torch_adam_with_custom_betas_and_per_step_lr():
    lrs = [1e-2 * (1 - k / 20) + 1e-4 for k in range(20)]  # a decaying lr handed to each step
    kwargs = {"lr": 3e-3, "betas": (0.8, 0.95), "eps": 1e-6}
    _, ours, _, theirs = run_both(SharedAdam, kwargs, torch.optim.Adam, kwargs, lrs=lrs)
    for mine, ref in zip(ours, theirs):
        assert_close(mine, ref.detach(), **TIGHT)


def test_shared_rmsprop_matches_torch_rmsprop_over_20_steps():
    shared, ours, reference, theirs = run_both(
        SharedRMSprop, {"lr": 1e-2}, torch.optim.RMSprop, {"lr": 1e-2, "alpha": 0.99, "eps": 1e-5}
    )
    for mine, ref in zip(ours, theirs):
        assert_close(mine, ref.detach(), **TIGHT)
    for i, ref in enumerate(theirs):
        assert_close(shared.state["square_avg"][i], reference.state[ref]["square_avg"], **TIGHT)


def test_make_optimizer_builds_the_named_optimizer_with_the_lr():
    params = initial_params()
    adam = make_optimizer("adam", params, 0.5)
    rms = make_optimizer("rmsprop", params, 0.25)
    assert isinstance(adam, SharedAdam) and adam.lr == 0.5
    assert isinstance(rms, SharedRMSprop) and rms.lr == 0.25


def test_step_refuses_a_wrong_number_of_gradients():
    params = initial_params()
    optimizer = SharedAdam(params)
    with pytest.raises(ValueError):
        optimizer.step([torch.zeros(3, 4)])


def test_share_memory_moves_every_state_tensor_to_shared_memory():
    for optimizer in (SharedAdam(initial_params()), SharedRMSprop(initial_params())):
        optimizer.share_memory()
        assert optimizer.steps.is_shared()
        tensors = [t for group in optimizer.state.values() for t in group]
        assert tensors and all(t.is_shared() for t in tensors)


def test_state_dict_round_trip_continues_identically():
    grads = gradient_sequence(10)
    a_params = initial_params()
    a = SharedAdam(a_params, lr=1e-2)
    for g in grads[:5]:
        a.step(g)
    saved = a.state_dict()
    b_params = [p.clone() for p in a_params]
    b = SharedAdam(b_params, lr=1e-2)
    b.load_state_dict(saved)
    for g in grads[5:]:
        a.step(g)
        b.step(g)
    assert float(b.steps) == 10
    for x, y in zip(a_params, b_params):
        assert torch.equal(x, y)


def adam_ratio(exp_avg, exp_avg_sq, step, betas) -> torch.Tensor:
    return (exp_avg / (1 - betas[0] ** step)) / (exp_avg_sq / (1 - betas[1] ** step)).sqrt()


@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.8, 0.95)])
def test_adam_ratio_bound_is_what_the_worst_gradient_sequence_reaches(betas):
    # Cauchy-Schwarz is tight for gradients growing by b2 / b1 per step; any other sequence stays below
    steps = 60
    worst = torch.tensor([(betas[1] / betas[0]) ** i for i in range(steps)])
    generator = torch.Generator().manual_seed(3)
    for sequence in (worst, torch.randn(steps, generator=generator), torch.rand(steps, generator=generator)):
        param = torch.zeros(1, requires_grad=True)
        adam = torch.optim.Adam([param], lr=1e-3, betas=betas, eps=0.0)
        for g in sequence:
            param.grad = g.reshape(1).clone()
            adam.step()
        state = adam.state[param]
        ratio = adam_ratio(state["exp_avg"], state["exp_avg_sq"], steps, betas).abs().item()
        assert ratio <= adam_ratio_bound(*betas, steps) * (1 + 1e-6)
    assert ratio < adam_ratio_bound(*betas, steps) * 0.9  # the random sequences: well below
    param = torch.zeros(1)
    shared = SharedAdam([param], lr=1e-3, betas=betas, eps=0.0)
    for g in worst[:-1]:
        shared.step([g.reshape(1)])
    before = param.clone()
    shared.step([worst[-1].reshape(1)])
    assert (before - param).abs().item() == pytest.approx(1e-3 * adam_ratio_bound(*betas, steps), rel=1e-4)


def test_a_race_that_left_a_gradient_in_m_but_not_in_v_moves_a_weight_at_most_the_bound():
    # Hogwild: another worker's gradient reached exp_avg, its square never reached exp_avg_sq (0 at the
    # start); this worker's own gradient is 0 there. Unclamped, the weight would move by lr * 0.3 / eps.
    param = torch.zeros(1)
    adam = SharedAdam([param], lr=1e-3)
    adam.state["exp_avg"][0].fill_(0.3)
    adam.step([torch.zeros(1)])
    assert 0 < param.abs().item() <= 1e-3 * adam_ratio_bound(0.9, 0.999, 1) * (1 + 1e-6)


def test_a_race_that_overwrote_rmsprops_square_average_moves_a_weight_at_most_the_bound(monkeypatch):
    # another worker's write of the square average (read before this one's add) lands after it:
    # this step's own g^2 is lost, the average stays 0, and g / eps would move the weight by 1e5 lr
    param = torch.zeros(1)
    rmsprop = SharedRMSprop([param], lr=1e-3, alpha=0.99)
    monkeypatch.setattr(torch, "_foreach_addcmul_", lambda *args, **kwargs: None)
    rmsprop.step([torch.ones(1)])
    assert 0 < param.abs().item() <= 1e-3 / (1 - 0.99) ** 0.5 * (1 + 1e-6)


ADAM_STEPS_IN_PARENT = 3
ADAM_STEPS_PER_CHILD = 4
CHILDREN = 3


def _adam_child(optimizer: SharedAdam, grad_value: float) -> None:
    torch.set_num_threads(1)
    grads = [torch.full_like(p, grad_value) for p in optimizer.params]
    for _ in range(ADAM_STEPS_PER_CHILD):
        optimizer.step(grads)


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_shared_adam_state_and_step_counter_are_shared_with_forked_workers():
    g, lr = 0.5, 1e-2
    params = [p.share_memory_() for p in initial_params()]
    optimizer = SharedAdam(params, lr=lr).share_memory()
    grads = [torch.full_like(p, g) for p in params]
    for _ in range(ADAM_STEPS_IN_PARENT):
        optimizer.step(grads)

    ctx = mp.get_context("fork")
    for _ in range(CHILDREN):  # one after another: no races, so exact expectations
        process = ctx.Process(target=_adam_child, args=(optimizer, g))
        process.start()
        process.join(30)
        assert process.exitcode == 0

    n = ADAM_STEPS_IN_PARENT + CHILDREN * ADAM_STEPS_PER_CHILD
    beta1, beta2 = optimizer.betas
    assert float(optimizer.steps) == n
    for exp_avg, exp_avg_sq in zip(optimizer.state["exp_avg"], optimizer.state["exp_avg_sq"]):
        assert_close(exp_avg, torch.full_like(exp_avg, g * (1 - beta1**n)), rtol=1e-5, atol=1e-7)
        assert_close(exp_avg_sq, torch.full_like(exp_avg_sq, g * g * (1 - beta2**n)), rtol=1e-5, atol=1e-9)

    # the parameters saw the same n updates, with the global step in the bias correction
    reference = [p.clone() for p in initial_params()]
    single = SharedAdam(reference, lr=lr)
    for _ in range(n):
        single.step(grads)
    for shared_param, expected in zip(params, reference):
        assert_close(shared_param, expected, **TIGHT)


def test_linear_decay_values():
    assert linear_decay(1e-3, 0.0) == pytest.approx(1e-3)
    assert linear_decay(1e-3, 0.25) == pytest.approx(7.5e-4)
    assert linear_decay(1e-3, 0.5) == pytest.approx(5e-4)
    assert linear_decay(1e-3, 1.0) == 0.0
    assert linear_decay(1e-3, 1.5) == 0.0  # past the budget: zero, never negative


def test_the_budget_is_the_env_steps_or_the_minutes_whichever_is_further_spent():
    assert budget_used(250, 1000, 3600.0, 0.0) == pytest.approx(0.25)  # no wall-clock budget: the minutes count nothing
    assert budget_used(250, 1000, 30.0, 2.0) == pytest.approx(0.25)  # a quarter of the steps, an eighth of the time
    assert budget_used(250, 1000, 90.0, 2.0) == pytest.approx(0.75)  # three quarters of the time
    assert budget_used(2000, 1000, 90.0, 2.0) == pytest.approx(2.0)


def test_current_lr_decays_only_when_asked():
    config = Config(lr=2e-3, max_steps=1000, lr_decay=True)
    assert current_lr(config, 500, 0.0) == pytest.approx(1e-3)
    assert current_lr(config.replace(max_minutes=1.0), 500, 45.0) == pytest.approx(5e-4)  # the time, further on
    assert current_lr(config.replace(lr_decay=False), 500, 0.0) == pytest.approx(2e-3)
    assert current_lr(config.replace(lr_decay=False, max_minutes=1.0), 500, 45.0) == pytest.approx(2e-3)
