"""The tiny checkpoint loads in vLLM (CPU build) and agrees with transformers on tokens and greedy output."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not installed"),
]

# vLLM spawns worker processes that re-import __main__, so it runs as a script file with a guard.
_SCRIPT = '''
import json, sys

def main(model_dir, out_path):
    from vllm import LLM, SamplingParams
    chats = json.loads(sys.stdin.read())
    llm = LLM(model=model_dir, dtype="float32", max_model_len=1024, enforce_eager=True,
              gpu_memory_utilization=0.05, seed=0)
    outs = llm.chat(chats, SamplingParams(temperature=0.0, max_tokens=8))
    with open(out_path, "w") as f:
        json.dump([{"prompt_token_ids": list(o.prompt_token_ids),
                    "token_ids": list(o.outputs[0].token_ids)} for o in outs], f)

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
'''

_CHATS = [
    [{"role": "system", "content": "You are playing Sokoban."},
     {"role": "user", "content": "######\n#_P__#\n#_X__#\n#_O__#\n######\nTurn 1 of 5."}],
    [{"role": "user", "content": "Pick an arm: phoenix or dragon."}],
]


def test_vllm_loads_tiny_checkpoint_and_matches_transformers(tiny_model_dir: Path, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    script = tmp_path / "run_vllm.py"
    script.write_text(_SCRIPT)
    out = tmp_path / "out.json"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(script), str(tiny_model_dir), str(out)],
                          input=json.dumps(_CHATS), text=True, capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(out.read_text())

    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    model = transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    for chat, result in zip(_CHATS, results, strict=True):
        prompt = tok.apply_chat_template(chat, add_generation_prompt=True, return_dict=False)
        assert result["prompt_token_ids"] == prompt
        with torch.no_grad():
            hf = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
        assert result["token_ids"] == hf[0, len(prompt):].tolist()
