"""`--precision` (issue 36) reaches every entry point: declared once in the option table, it is a
flag of every command that verifies (verify, optimize, bench, profile, dataset build), an
`AgentConfig` and API keyword, an MCP tool argument, and from `VerifyOptions` it reaches the
jobs (the sandbox's job environment), the compiler drafter (its precision and cache key) and the
LLM's prompt. No job runs here."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.helpers import EX
from tools.core.problem_dtype import PRECISION_ENV
from tools.orchestrate.verify import Verifier, VerifyOptions

RELU = str(EX / "problems" / "relu.py")
KERNEL = str(EX / "kernels" / "relu.py")

COMMANDS = {
    "verify": ["verify", "p.py", "k.py"],
    "optimize": ["optimize", "p.py"],
    "bench": ["bench", "problems"],
    "profile": ["profile", "p.py", "k.py"],
}


def _precision(argv: list[str]) -> str:
    """The precision a command's parsed flags give its verifier."""
    from agent.cli.bench import bench_config
    from agent.cli.common import verify_options_from
    from agent.cli.main import build_parser
    from agent.cli.optimize import config_from

    args = build_parser().parse_args(argv)
    if argv[0] in ("verify", "profile"):
        return verify_options_from(args).precision
    if argv[0] == "optimize":
        return config_from(args).verify_options().precision
    return bench_config(args).verify_options().precision


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("flag, expected", [([], "fp32"), (["--precision", "bf16"], "bf16"),
                                            (["--precision", "fp16"], "fp16")])  # fmt: skip
def test_each_command_maps_the_flag(command, flag, expected):
    assert _precision(COMMANDS[command] + flag) == expected


def test_dataset_build_has_the_flag():
    from agent.cli.main import build_parser

    args = build_parser().parse_args(
        ["dataset", "build", "problems", "--out", "d", "--precision", "bf16"]
    )
    assert args.precision == "bf16"


def test_a_bad_value_is_refused_by_the_parser(capsys):
    from agent.cli.main import main

    code = main(["verify", RELU, KERNEL, "--precision", "fp8", "--json"])
    assert code == 2


def test_bench_records_it_in_its_settings():
    from agent.cli.bench import bench_config
    from agent.cli.main import build_parser

    args = build_parser().parse_args(["bench", "problems", "--precision", "fp16"])
    assert bench_config(args).settings()["precision"] == "fp16"


def test_the_api_takes_it():
    from agent.api import verify_options

    assert verify_options(precision="bf16").precision == "bf16"
    assert verify_options().precision == "fp32"


def test_the_mcp_tools_take_it():
    from agent.mcp_server import build_server

    server = build_server()
    tools = {t.name: t for t in server._tool_manager.list_tools()}  # noqa: SLF001
    for name in ("verify", "profile", "optimize", "repair"):
        prop = tools[name].parameters["properties"]["precision"]
        assert prop.get("enum") == ["fp32", "bf16", "fp16"] and prop["default"] == "fp32", name


def test_the_mcp_verify_tool_passes_it_to_its_verifier(monkeypatch):
    import anyio

    import agent.api
    from agent.mcp_server import build_server

    seen = []

    def fake_verify(problem, kernel, *, verifier=None, **kw):
        seen.append(verifier.options.precision)
        from tools.orchestrate.evaluate import no_code_verdict

        return no_code_verdict("faked")

    monkeypatch.setattr(agent.api, "verify", fake_verify)
    monkeypatch.setattr(Verifier, "sandbox_factory", staticmethod(lambda **kw: SimpleNamespace()))
    server = build_server()
    args = {"problem": RELU, "kernel": KERNEL, "trials": 1, "aot_target": None, "precision": "fp16"}
    anyio.run(lambda: server.call_tool("verify", args))
    assert seen == ["fp16"]


def test_the_verifier_runs_its_jobs_at_it(monkeypatch):
    monkeypatch.setattr(Verifier, "sandbox_factory", staticmethod(lambda **kw: SimpleNamespace()))
    assert Verifier(VerifyOptions(device="cpu", precision="bf16")).sandbox.job_env == {
        PRECISION_ENV: "bf16"
    }
    assert Verifier(VerifyOptions(device="cpu")).sandbox.job_env == {}


def test_the_sandbox_gives_its_jobs_the_environment():
    from tools.sandboxing.sandbox import Sandbox

    sandbox = Sandbox(device="cpu", max_workers=1)
    sandbox.job_env = {PRECISION_ENV: "fp16"}
    out = sandbox.run("tests.test_precision_dtype_entry:_job_precision", timeout=120)
    assert out.kind == "ok" and out.value == "fp16", out


def _job_precision() -> str:
    from tools.core.problem_dtype import job_precision

    return job_precision()


def test_the_compiler_drafter_drafts_at_it():
    from agent.drafters import CompilerDrafter, draft_cache_key
    from tools.sandboxing.sandbox import Sandbox

    sandbox = Sandbox(device="cpu", max_workers=1)
    sandbox.job_env = {PRECISION_ENV: "bf16"}
    drafter = CompilerDrafter(sandbox, "cpu")
    assert drafter.precision == "bf16" and drafter.sandbox.job_env == {PRECISION_ENV: "bf16"}
    assert CompilerDrafter(Sandbox(device="cpu", max_workers=1), "cpu").precision == "fp32"
    assert draft_cache_key("src", "cpu@bf16") != draft_cache_key("src", "cpu")


def test_the_prompt_says_the_dtype():
    from agent.config import AgentConfig
    from agent.drafters import first_prompt

    source = open(RELU).read()
    at_bf16 = first_prompt(source, AgentConfig(precision="bf16", backend="compiler"), None)
    at_fp32 = first_prompt(source, AgentConfig(backend="compiler"), None)
    assert "torch.bfloat16" in at_bf16 and "Precision: bf16" in at_bf16
    assert "Precision:" not in at_fp32


def test_the_sanitizers_run_is_at_it(monkeypatch):
    """`verify --sanitize`'s extra trial (a process of its own under compute-sanitizer) runs at
    the verification's precision: its environment carries it."""
    import subprocess

    from tools.orchestrate import sanitize

    envs = []

    def fake_run(cmd, *, env, **kw):
        envs.append(env)
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(sanitize, "sanitizer_path", lambda: "/bin/true")
    monkeypatch.setattr(sanitize.subprocess, "run", fake_run)
    sanitize.run_sanitizer(RELU, "source", seed=1, precision="fp16")
    assert envs and all(e.get(PRECISION_ENV) == "fp16" for e in envs)


def test_a_bench_resumes_at_its_precision_and_from_before_it(tmp_path):
    """A bench's precision is a resume key: resuming a bf16 bench at fp32 is refused; a bench
    written before the precision was recorded ran at fp32 and resumes at fp32."""
    import json

    from agent.bench.run import _check_resume
    from agent.bench.store import BenchDir
    from agent.cli.bench import bench_config
    from agent.cli.main import build_parser
    from tools.core.errors import BadInputError

    def config(*flags):
        return bench_config(build_parser().parse_args(["bench", "problems", *flags]))

    bdir = BenchDir(tmp_path)
    (tmp_path / "bench.json").write_text(json.dumps(config("--precision", "bf16").settings()))
    _check_resume(bdir, config("--precision", "bf16"))
    with pytest.raises(BadInputError, match="precision: 'bf16' -> 'fp32'"):
        _check_resume(bdir, config())
    old = config().settings()
    del old["precision"]
    (tmp_path / "bench.json").write_text(json.dumps(old))
    _check_resume(bdir, config())


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_the_bench_report_applies_the_fp32_contract_at_fp32_only(precision):
    """A bf16 kernel is outside the fp32 contract in an fp32 bench; in a bf16 bench bf16 is the
    problem's own arithmetic, and the report says the contract does not apply."""
    from agent.bench.report import add_arithmetic

    sample = {"problem": "p", "sample": 0, "source": "compiler", "status": "ok", "correct": True,
              "compiled": True}  # fmt: skip
    report = {"settings": {"precision": precision}, "metrics": {}, "notes": [],
              "problems": [{"problem": "p", "samples": [sample], "correct": True}]}  # fmt: skip
    add_arithmetic(report, {("p", 0): ["fp32", "bf16"]})
    outside = report["metrics"]["arithmetic"]["outside_fp32_contract"]
    if precision == "fp32":
        assert outside == ["p"] and "outside the fp32 contract" in report["notes"][0]
    else:
        assert outside == [] and "does not apply at bf16" in report["notes"][0]


def test_a_report_cell_marks_half_precision_only_in_an_fp32_problem():
    from tools.checks.arithmetic import cell

    assert cell(["fp32", "bf16"]) == "fp32, bf16 (outside the fp32 contract)"
    assert cell(["fp32", "bf16"], None) == "fp32, bf16 (outside the fp32 contract)"  # older runs
    assert cell(["fp32", "bf16"], "bf16") == "fp32, bf16"


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_the_drafter_traces_the_problem_at_it(monkeypatch, precision):
    """What Inductor traces (`tools.draft.loading.load_problem`): the model and its floating
    inputs at the precision, given or from the draft job's environment."""
    import torch

    from tools.core.problem_dtype import torch_dtype
    from tools.draft.loading import load_problem

    source = (EX / "problems" / "scale_add_bias.py").read_text()
    given = load_problem(source, "cpu", precision)
    monkeypatch.setenv(PRECISION_ENV, precision)
    from_env = load_problem(source, "cpu")
    for loaded in (given, from_env):
        assert loaded.model.scale.dtype == torch_dtype(precision)
        assert [x.dtype for x in loaded.inputs] == [torch_dtype(precision)]
    monkeypatch.delenv(PRECISION_ENV)
    assert load_problem(source, "cpu").inputs[0].dtype == torch.float32


def test_a_shared_sandbox_runs_at_its_last_verifiers_precision(monkeypatch):
    shared = SimpleNamespace(job_env={"OTHER": "1"})
    Verifier(VerifyOptions(device="cpu", precision="fp16"), sandbox=shared)
    assert shared.job_env == {"OTHER": "1", PRECISION_ENV: "fp16"}
    Verifier(VerifyOptions(device="cpu"), sandbox=shared)
    assert shared.job_env == {"OTHER": "1"}  # fp32: no cast left behind
