"""a3c.nets.flat: parameters and gradients as views of one tensor."""

import pytest
import torch
import torch.multiprocessing as mp
from torch.testing import assert_close

from a3c.nets.actor_critic import ActorCritic, StockOptions
from a3c.nets.flat import attach_flat_gradient, clip_norm_, flatten_parameters


def test_parameters_become_views_of_the_flat_tensor_with_their_values_kept():
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    weights = flatten_parameters(model)
    assert weights.numel() == sum(p.numel() for p in model.parameters())
    for key, value in model.state_dict().items():
        assert_close(value, before[key], rtol=0, atol=0)
    weights.add_(1.0)  # writing the flat tensor writes every parameter
    for name, param in model.named_parameters():
        assert_close(param.detach(), before[name] + 1.0)


def write_through(weights):
    weights.fill_(7.0)


@pytest.mark.slow
def test_sharing_the_flat_tensor_shares_every_parameter_with_a_child_process():
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=False))
    weights = flatten_parameters(model).share_memory_()
    assert all(p.is_shared() for p in model.parameters())
    child = mp.get_context("fork").Process(target=write_through, args=(weights,))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert all(bool((p == 7.0).all()) for p in model.parameters())


def test_clip_norm_matches_torch_clip_grad_norm():
    torch.manual_seed(0)
    grads = [torch.randn(5, 3) * 4, torch.randn(7)]
    flat = torch.cat([g.reshape(-1) for g in grads])
    params = [torch.zeros_like(g, requires_grad=True) for g in grads]
    for param, grad in zip(params, grads):
        param.grad = grad.clone()
    expected_norm = torch.nn.utils.clip_grad_norm_(params, 1.5)
    norm = clip_norm_(flat, 1.5)
    assert_close(norm, expected_norm)
    assert_close(flat, torch.cat([p.grad.reshape(-1) for p in params]))


def test_clip_norm_leaves_a_small_gradient_alone():
    grad = torch.tensor([0.3, -0.4])
    assert clip_norm_(grad, 1.0).item() == 0.5
    assert_close(grad, torch.tensor([0.3, -0.4]))


def test_attached_gradient_receives_backward_of_every_parameter():
    model = ActorCritic(4, 2, StockOptions(hidden_sizes=(8,), noisy=True))
    flatten_parameters(model)
    grad = attach_flat_gradient(model)
    logits, value, _ = model(torch.randn(3, 4), model.initial_state(3))
    (logits.sum() + value.sum()).backward()
    views = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert_close(grad, views, rtol=0, atol=0)
    assert grad.abs().sum() > 0
