"""Model-assisted review against a local stand-in of the OpenAI chat-completions protocol
(protocol only: no real model is involved)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from service.config import REPO_ROOT
from service.exercises import ExerciseCatalog
from service.grading.freetext import score_text
from service.grading.model_assist import ModelAssist

EXERCISE = ExerciseCatalog(REPO_ROOT / "exercises").get("lesson06_mean_var")
Q2 = EXERCISE.question("q2")
FULL = ("other=0.0 只让第一次求和安全。减掉均值以后 padding 变成 -mean，平方以后是 mean^2，"
        "所以第二次求和多出 (BLOCK-N)*mean^2，方差偏大，要用 tl.where 再 mask 一次。")


@pytest.fixture
def stand_in():
    """A chat-completions server that answers with the verdict the test sets, and records requests."""
    state = {"verdict": {"points": 2, "concepts_found": ["excess"], "rationale": "ok"}, "requests": [], "status": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state["requests"].append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": json.dumps(state["verdict"])}}]})
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(payload.encode())

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()


def item(answer: str):
    return score_text(item_id="q2", title="Q2", max_points=2, question=Q2, answer=answer)


def test_agreement_adds_evidence_and_never_changes_points(stand_in):
    assist = ModelAssist(base_url=stand_in["url"], model="stand-in", api_key="secret")
    before = item(FULL)
    after = assist.annotate(before, Q2, FULL)
    assert after.points == before.points == 2 and after.status == before.status
    assert after.evidence["model_opinion"]["points"] == 2 and after.evidence["model_opinion"]["model"] == "stand-in"
    request = stand_in["requests"][0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer secret"
    sent = json.loads(request["body"]["messages"][1]["content"])
    assert sent["answer"] == FULL and sent["rubric"]["causal_chains"] == [Q2.chain]
    assert sent["rubric"]["concepts"][0] == {"id": Q2.concepts[0].id, "label": Q2.concepts[0].label.zh}


def test_a_question_in_two_parts_sends_both_chains(stand_in):
    """Welford Q3 asks about n_b and about M2_b: the model sees both parts' chains (the scorer counts both)."""
    q3 = ExerciseCatalog(REPO_ROOT / "exercises").get("welford_merge").question("q3")
    answer = "M2_b 那里要 tl.where 一下：padding lane 减完 mean_b 是 −mean_b，所以平方是 mean_b²，不 mask 掉会加进 M2_b。"
    ModelAssist(base_url=stand_in["url"], model="stand-in").annotate(
        score_text(item_id="q3", title="Q3", max_points=2, question=q3, answer=answer), q3, answer)
    sent = json.loads(stand_in["requests"][0]["body"]["messages"][1]["content"])
    assert q3.more_chains and sent["rubric"]["causal_chains"] == [q3.chain, *q3.more_chains]
    assert {"padding_mean_sq", "remask"} <= {c["id"] for c in sent["rubric"]["concepts"]}


def test_disagreement_sends_the_item_to_a_ta(stand_in):
    stand_in["verdict"] = {"points": 0, "rationale": "terms only"}
    assist = ModelAssist(base_url=stand_in["url"], model="stand-in")
    after = assist.annotate(item(FULL), Q2, FULL)
    assert after.points == 2, "the model never sets the score"
    assert after.status == "needs_review" and "model_disagrees" in after.evidence["flags"]


@pytest.mark.parametrize("verdict", [{"points": 7}, {"nothing": 1}, "not json"])
def test_a_broken_or_absent_model_changes_nothing(stand_in, verdict):
    stand_in["verdict"] = verdict
    assist = ModelAssist(base_url=stand_in["url"], model="stand-in")
    before = item(FULL)
    after = assist.annotate(before, Q2, FULL)
    assert (after.points, after.status) == (before.points, before.status) and "error" in after.evidence["model_opinion"]
    down = ModelAssist(base_url="http://127.0.0.1:9/v1", model="x", timeout_s=1).annotate(before, Q2, FULL)
    assert down.points == before.points and "error" in down.evidence["model_opinion"]
