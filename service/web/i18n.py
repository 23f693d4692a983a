"""The pages' words, in the report's language (zh for Chinese lessons, en otherwise)."""
from __future__ import annotations

from typing import Literal

Language = Literal["zh", "en"]

_ZH = {
    "lang": "zh-CN",
    "feedback_title": "作业反馈",
    "exercise": "练习",
    "status_queued": "排队中：还没有开始评分。页面会自动刷新。",
    "status_running": "正在评分，通常不超过一分钟。页面会自动刷新。",
    "not_gradable": "这次没能评分，问题在我们这边，不在你的代码。它不计入你的成绩，我们会重新评分。",
    "score": "得分",
    "pass_line": "及格线",
    "passed": "已通过",
    "not_passed": "未通过",
    "provisional": "暂定成绩：还有助教没复核的项目，分数可能会变。",
    "pending_ta": "待助教复核",
    "held_by_veto": "分数达到了及格线，但有否决项（见下），所以不算通过。",
    "held_by_requirements": "没有通过，因为这些通过要求没有满足：",
    "requirements_title": "通过要求（全部满足才算通过）",
    "requirement_met": "满足",
    "requirement_unmet": "未满足",
    "claim_yours": "你写的运行输出",
    "claim_ours": "我们的实际运行输出",
    "items_title": "评分项",
    "points": "分",
    "status_pass": "满分",
    "status_fail": "未得分",
    "status_partial": "部分得分",
    "status_needs_review": "待助教复核",
    "vetoes": "否决项",
    "veto_suspected": "待助教决定",
    "veto_confirmed": "已确认",
    "veto_dismissed": "已撤销",
    "veto_modified_outside_blank": "填空以外的代码被改动",
    "veto_boundary_check_removed": "删除或放宽了边界检查",
    "veto_unverified_claim": "声称的运行结果与实际不符",
    "veto_coincidental_pass": "可能是碰巧通过",
    "diagnoses": "诊断",
    "failed_cases": "没通过的用例",
    "passed_cases": "通过的用例",
    "cases_summary": "{passed} / {total} 个用例通过",
    "kind_regular": "常规", "kind_boundary": "边界", "kind_probe": "探针", "kind_given": "给定检查",
    "shape": "形状",
    "max_abs_err": "最大绝对误差",
    "max_rel_err": "最大相对误差",
    "error_ratio": "误差 / 容差",
    "tolerance": "容差",
    "first_mismatch": "第一个不一致",
    "observed": "你的结果",
    "expected": "正确结果",
    "allowed": "允许误差",
    "crashed": "运行出错",
    "targets": "针对的误区",
    "padding_title": "一行的 lane：N = {n} 个有效 lane，BLOCK − N = {pad} 个 padding lane",
    "padding_sum_title": "第二次求和 Σ(x − mean)² 中各部分的贡献",
    "padding_valid_sum": "有效 lane",
    "padding_padding_sum": "padding lane",
    "padding_ok": "padding lane 贡献 0：二次 mask 把它们清零了。",
    "padding_bad": "padding lane 每个贡献约 mean² ≈ {each}，合计 {total}：方差偏大就是这么来的。",
    "legend_valid": "有效 lane（计入）",
    "legend_missed": "有效 lane（漏算）",
    "legend_counted": "padding lane（被错误计入）",
    "legend_padding": "padding lane（清零）",
    "graded_with": "评分环境",
    "backend_interpreter": "CPU 上的 Triton 解释器",
    "backend_gpu": "GPU",
    "graded_at": "评分时间",
    "not_found_title": "找不到这个反馈链接",
    "not_found": "链接不对或已失效。请从课程平台重新打开你的反馈。",
    "ta_note": "助教复核",
    "perf_title": "速度（仅供参考，不计分）",
    "perf_intro": "在 GPU 上用一个大输入给你的内核计时，和课程里关于访存量的说法放在一起看。这一项不影响分数。",
    "perf_claim": "课程的说法",
    "perf_shape": "计时的形状（fp32）",
    "perf_kernel": "你的内核",
    "perf_time": "中位数 {median}（p20–p80：{p20}–{p80}，{reps} 次）",
    "perf_bandwidth": "达到的带宽",
    "perf_bandwidth_value": "{gbps} GB/s（理想访存量 ÷ 中位耗时）",
    "perf_peak": "占 HBM 带宽上限",
    "perf_peak_value": "{percent}%（上限 {peak} GB/s，来源：{source}）",
    "perf_copy": "占实测拷贝带宽",
    "perf_copy_value": "{percent}%（同一输入 copy_：{copy} GB/s）",
    "perf_baseline": "基线：{label}",
    "perf_baseline_value": "{time}；按理想访存量折合 {gbps} GB/s",
    "perf_speedup": "相对基线的加速比",
    "perf_predicted": "（按课程的说法约为 {predicted}）",
    "perf_bytes": "理想内核的访存量：{note} = {mb} MB",
    "perf_method": "方法：{tool}；每个函数先预热约 {warmup} ms，再重复约 {rep} ms；每次重复前清空 L2（写 {flush} MB 缓冲区），用 CUDA event 计时，取中位数。测速与你的代码在同一个沙箱进程里进行。",
    "perf_reused": "这些数字来自此前对逐字节相同程序的一次测速（同一练习版本、同一设备型号与 Triton 版本）。",
}

_EN = {
    "lang": "en",
    "feedback_title": "Feedback",
    "exercise": "Exercise",
    "status_queued": "Queued: grading has not started yet. This page refreshes itself.",
    "status_running": "Being graded, usually within a minute. This page refreshes itself.",
    "not_gradable": "We could not grade this, and the failure is ours, not your code's. It costs you nothing; it will be graded again.",
    "score": "Score",
    "pass_line": "pass line",
    "passed": "Passed",
    "not_passed": "Not passed",
    "provisional": "Provisional: a TA has still to review part of it, so the score may change.",
    "pending_ta": "waiting for a TA",
    "held_by_veto": "The score reaches the pass line, but a veto (below) holds the pass back.",
    "held_by_requirements": "Not passed, because these pass requirements are not met:",
    "requirements_title": "Pass requirements (all must be met)",
    "requirement_met": "met",
    "requirement_unmet": "not met",
    "claim_yours": "The run output you gave",
    "claim_ours": "Our real run output",
    "items_title": "Rubric",
    "points": "pts",
    "status_pass": "full marks",
    "status_fail": "no points",
    "status_partial": "partial",
    "status_needs_review": "waiting for a TA",
    "vetoes": "Vetoes",
    "veto_suspected": "waiting for a TA's decision",
    "veto_confirmed": "confirmed",
    "veto_dismissed": "dismissed",
    "veto_modified_outside_blank": "Code outside the blank was changed",
    "veto_boundary_check_removed": "A boundary check was removed or loosened",
    "veto_unverified_claim": "The claimed run output does not match the real one",
    "veto_coincidental_pass": "The pass may be a coincidence",
    "diagnoses": "Diagnosis",
    "failed_cases": "Failed cases",
    "passed_cases": "Passed cases",
    "cases_summary": "{passed} of {total} cases passed",
    "kind_regular": "regular", "kind_boundary": "boundary", "kind_probe": "probe", "kind_given": "given check",
    "shape": "shape",
    "max_abs_err": "largest absolute error",
    "max_rel_err": "largest relative error",
    "error_ratio": "error / tolerance",
    "tolerance": "tolerance",
    "first_mismatch": "first mismatch",
    "observed": "yours",
    "expected": "correct",
    "allowed": "allowed error",
    "crashed": "crashed",
    "targets": "targets",
    "padding_title": "One row's lanes: N = {n} valid lanes, BLOCK − N = {pad} padding lanes",
    "padding_sum_title": "What each group added to the second sum Σ(x − mean)²",
    "padding_valid_sum": "valid lanes",
    "padding_padding_sum": "padding lanes",
    "padding_ok": "The padding lanes added 0: the second mask zeroed them.",
    "padding_bad": "Each padding lane added about mean² ≈ {each}, {total} in all: that is the excess variance.",
    "legend_valid": "valid lane (counted)",
    "legend_missed": "valid lane (left out)",
    "legend_counted": "padding lane (wrongly counted)",
    "legend_padding": "padding lane (zeroed)",
    "graded_with": "Graded with",
    "backend_interpreter": "the Triton interpreter on a CPU",
    "backend_gpu": "a GPU",
    "graded_at": "graded at",
    "not_found_title": "No such feedback link",
    "not_found": "The link is wrong or no longer valid. Open your feedback again from the course platform.",
    "ta_note": "TA review",
    "perf_title": "Speed (for information, no points)",
    "perf_intro": "Your kernel timed on a GPU on one large input, next to what the lesson says about its memory traffic. "
                  "It does not change your score.",
    "perf_claim": "What the lesson says",
    "perf_shape": "timed shape (fp32)",
    "perf_kernel": "your kernel",
    "perf_time": "median {median} (p20–p80: {p20}–{p80}, {reps} runs)",
    "perf_bandwidth": "achieved bandwidth",
    "perf_bandwidth_value": "{gbps} GB/s (ideal bytes ÷ median time)",
    "perf_peak": "share of the HBM ceiling",
    "perf_peak_value": "{percent}% (ceiling {peak} GB/s, from {source})",
    "perf_copy": "share of the measured copy bandwidth",
    "perf_copy_value": "{percent}% (copy_ of the same input: {copy} GB/s)",
    "perf_baseline": "baseline: {label}",
    "perf_baseline_value": "{time}; {gbps} GB/s at the ideal bytes",
    "perf_speedup": "speed-up over the baseline",
    "perf_predicted": " (the lesson implies about {predicted})",
    "perf_bytes": "Bytes the ideal kernel moves: {note} = {mb} MB",
    "perf_method": "Method: {tool}; each function warmed up for about {warmup} ms, then repeated for about {rep} ms; "
                   "the L2 cache flushed before every repetition (a {flush} MB buffer written), CUDA events, the median. "
                   "The timing runs in the same sandbox process as your code.",
    "perf_reused": "These figures come from an earlier timing of a byte-identical program (same exercise version, "
                   "device model and Triton version).",
}

# The first screen of the feedback page (issue 21): why the verdict, the diagnosis that matters.
_ZH.update({
    "language_name": "中文",
    "switch_language": "语言",
    "why_title": "为什么没有通过",
    "why_veto": "否决项",
    "why_requirement": "未满足的通过要求",
    "reason_line": "第 {line} 行",
    "reason_deleted_line": "删掉了模板第 {line} 行",
    "reason_somewhere": "某一行",
    "lead_diagnosis": "最关键的诊断",
    "more_diagnoses": "其他诊断（{count} 条）",
    "failed_summary": "{count} 个用例没通过（展开看每个用例的数字）",
    "other_vetoes": "否决项与复核状态",
    "hint_title": "提示",
    "hint_intro": "提示分四级：概念区域 → 具体方向 → 关键局部 → 完整答案。每次只给下一级，要了才显示；助教能看到你要过哪些。",
    "hint_general": "本练习的提示",
    "hint_for_diagnosis": "第 {number} 条诊断的提示",
    "hint_level": "第 {level} 级 · {name}",
    "hint_next": "要下一级提示：{name}",
    "hint_cost": "课程规定每级提示扣 {cost} 分。",
    "hint_all_given": "四级提示都已给出。",
})
_EN.update({
    "language_name": "English",
    "switch_language": "Language",
    "why_title": "Why it did not pass",
    "why_veto": "veto",
    "why_requirement": "pass requirement not met",
    "reason_line": "line {line}",
    "reason_deleted_line": "template line {line} deleted",
    "reason_somewhere": "a line",
    "lead_diagnosis": "The diagnosis that matters",
    "more_diagnoses": "Other diagnoses ({count})",
    "failed_summary": "{count} cases failed (open for each case's numbers)",
    "other_vetoes": "Vetoes and their review",
    "hint_title": "Hints",
    "hint_intro": "Hints come in four levels: concept area → direction → key spot → full answer. Each request "
                  "gives the next level only, shown once asked for; your TA sees which you took.",
    "hint_general": "Hints for this exercise",
    "hint_for_diagnosis": "Hints for diagnosis {number}",
    "hint_level": "Level {level} · {name}",
    "hint_next": "Next hint: {name}",
    "hint_cost": "The course charges {cost} points per hint level.",
    "hint_all_given": "All four levels have been given.",
})

TEXTS: dict[str, dict[str, str]] = {"zh": _ZH, "en": _EN}


def texts(language: str | None) -> dict[str, str]:
    return TEXTS.get(language or "zh", _ZH)


# --- LTI (service/lti) ---------------------------------------------------------------------
# A refused launch is shown in both languages: it failed before kernelgrade knew whose it was.
LTI_REFUSAL_TITLE = {"zh": "kernelgrade 无法打开这个活动", "en": "kernelgrade could not open this activity"}
LTI_REFUSALS: dict[str, dict[str, str]] = {
    "bad_request": {
        "zh": "课程平台发来的请求不完整，缺少 {detail}。请从课程里重新打开这个活动；如果一直这样，请联系课程管理员。",
        "en": "The course platform sent an incomplete request: {detail} is missing. Open the activity again from the "
              "course; if this keeps happening, tell the course's administrator."},
    "unknown_platform": {
        "zh": "这个课程平台（issuer {issuer}，client id {client_id}）没有在 kernelgrade 注册。"
              "管理员注册后才能使用：kernelgrade lti platforms add。",
        "en": "This course platform (issuer {issuer}, client id {client_id}) is not registered with kernelgrade. "
              "An administrator registers it first: kernelgrade lti platforms add."},
    "platform_revoked": {
        "zh": "这个课程平台在 kernelgrade 的注册已被撤销，所以不再接受它的启动。请联系课程管理员。",
        "en": "This course platform's registration with kernelgrade was revoked, so its launches are no longer "
              "accepted. Tell the course's administrator."},
    "unknown_deployment": {
        "zh": "课程平台的这个部署（deployment id {deployment}）没有在 kernelgrade 注册，或已被撤销。"
              "请课程管理员添加它：kernelgrade lti deployments add。",
        "en": "This deployment of the course platform (deployment id {deployment}) is not registered with kernelgrade, "
              "or it was revoked. The course's administrator adds it: kernelgrade lti deployments add."},
    "bad_state": {
        "zh": "浏览器没有把启动开始时 kernelgrade 设置的 cookie 发回来，所以无法确认这次启动来自你的浏览器。"
              "课程平台把 kernelgrade 嵌在框架里、而浏览器屏蔽第三方 cookie 时会这样：请在新窗口中打开这个活动，"
              "或允许本站的 cookie，然后从课程里重新打开。",
        "en": "Your browser did not send back the cookie kernelgrade set when the launch started, so the launch cannot "
              "be tied to your browser. This happens when the platform shows kernelgrade in a frame and the browser "
              "blocks third-party cookies: open the activity in a new window, or allow cookies for this site, then "
              "open it again from the course."},
    "bad_token": {
        "zh": "启动令牌格式不对，或缺少必需的声明（技术细节见下）。没有记录任何东西。",
        "en": "The launch token is malformed or lacks a required claim (the technical detail is below). Nothing was recorded."},
    "bad_signature": {
        "zh": "启动令牌的签名和这个课程平台公布的密钥都对不上：令牌在途中被改动过，或者是用平台没有公布的密钥签的。"
              "没有记录任何东西。请从课程里重新打开这个活动。",
        "en": "The launch token's signature matches no key the course platform publishes: the token was altered on "
              "the way, or signed with a key the platform does not publish. Nothing was recorded. Open the activity "
              "again from the course."},
    "expired": {
        "zh": "启动令牌已经过期。重新加载或很晚才提交启动页面时会这样。请从课程里重新打开这个活动。",
        "en": "The launch token has expired. This happens when a launch page is reloaded or sent late. "
              "Open the activity again from the course."},
    "replayed_nonce": {
        "zh": "这次启动已经用过了（一次性的 nonce 已被使用），或者它不是从 kernelgrade 开始的。每次启动只能用一次："
              "请从课程里重新打开这个活动。",
        "en": "This launch was used already (its one-time nonce is spent), or it did not start at kernelgrade. A launch "
              "works once: open the activity again from the course."},
    "bad_audience": {
        "zh": "这个启动令牌是发给另一个工具的（audience {detail}），不是给 kernelgrade 的。",
        "en": "This launch token was issued to another tool (audience {detail}), not to kernelgrade."},
    "bad_message": {
        "zh": "课程平台发来了 kernelgrade 不处理的消息（技术细节见下）。",
        "en": "The course platform sent a message kernelgrade does not handle (the technical detail is below)."},
    "launch_expired": {
        "zh": "这个页面的启动已经过期或无效（启动后 {hours} 小时内可以提交）。你的答案还没有提交：先复制保存，"
              "再从课程里重新打开这个活动。",
        "en": "This page's launch has expired or is unknown (a launch can submit for {hours} hours). Your answers were "
              "not submitted: copy them, then open the activity again from the course."},
    "no_exercise": {
        "zh": "这个活动没有关联 kernelgrade 的练习。请教师通过课程平台的内容选择器（deep linking）重新添加，"
              "或设置自定义参数 exercise=<练习 id>。",
        "en": "This activity is not linked to a kernelgrade exercise. An instructor adds it again through the "
              "platform's content picker (deep linking), or sets the custom parameter exercise=<exercise id>."},
    "unknown_exercise": {
        "zh": "这个活动关联的练习 {detail} 不在 kernelgrade 的练习目录里。",
        "en": "The exercise this activity links to, {detail}, is not in kernelgrade's catalog."},
    "not_instructor": {
        "zh": "只有教师可以为课程选择练习。",
        "en": "Only instructors can choose an exercise for the course."},
}

_ZH.update({
    "lti_submit_title": "提交你的答案",
    "lti_signed_in_as": "身份（来自课程平台）",
    "lti_code": "代码（填好空的那一格）",
    "lti_explanation": "填空说明",
    "lti_claimed_output": "你运行后看到的输出（原样粘贴；没有运行就写明是静态审阅）",
    "lti_submit": "提交评分",
    "lti_your_submissions": "你的提交",
    "lti_none_yet": "还没有提交。",
    "lti_open_feedback": "查看反馈",
    "lti_points_line": "满分 {max} 分，及格线 {threshold} 分（且没有否决项）",
    "lti_instructor": "教师视图",
    "lti_placement_submissions": "这个活动的提交",
    "lti_roster": "名单：{count} 人（同步于 {at}）",
    "lti_roster_never": "名单：还没有从课程平台同步",
    "lti_score_posts": "成绩回传",
    "lti_review_link": "到助教复核页面",
    "lti_pick_title": "选择一个 kernelgrade 练习",
    "lti_pick_intro": "选中的练习会作为一个活动加到课程里，成绩列满分 {max} 分。",
    "lti_pick_submit": "添加到课程",
    "lti_return_title": "正在返回课程平台…",
    "lti_return_button": "继续",
    "lti_errors": "没有提交，请改正：",
    "lti_graded_latest": "课程成绩册记录的是你最新一次评完的提交。",
    "lti_slow_down": "提交太频繁了：请等一分钟再提交。",
    "lti_queue_full": "评分队列已满：请过一分钟再提交。你的答案还在这个页面上。",
})
_EN.update({
    "lti_submit_title": "Submit your answer",
    "lti_signed_in_as": "You (from the course platform)",
    "lti_code": "Code (the cell with the blank filled in)",
    "lti_explanation": "What you filled in, and why",
    "lti_claimed_output": "The output you saw when you ran it (pasted as is; if you did not run it, say it is a static review)",
    "lti_submit": "Submit for grading",
    "lti_your_submissions": "Your submissions",
    "lti_none_yet": "No submissions yet.",
    "lti_open_feedback": "feedback",
    "lti_points_line": "{max} points, pass line {threshold} (and no veto)",
    "lti_instructor": "Instructor view",
    "lti_placement_submissions": "Submissions to this activity",
    "lti_roster": "Roster: {count} people (synchronised {at})",
    "lti_roster_never": "Roster: not synchronised from the platform yet",
    "lti_score_posts": "Grades sent back",
    "lti_review_link": "to the TA review pages",
    "lti_pick_title": "Choose a kernelgrade exercise",
    "lti_pick_intro": "The exercise becomes an activity of the course, with a gradebook column of {max} points.",
    "lti_pick_submit": "Add to the course",
    "lti_return_title": "Returning to the course platform…",
    "lti_return_button": "Continue",
    "lti_errors": "Not submitted; please fix:",
    "lti_graded_latest": "The course gradebook records your latest graded submission.",
    "lti_slow_down": "Too many submissions: wait a minute, then submit again.",
    "lti_queue_full": "The grading queue is full: submit again in a minute. Your answers are still on this page.",
})


# --- the assignment dashboard (service/web/dashboard.py) -------------------------------------
# The TA chooses the language (?lang=); diagnoses and concept labels stay in the lesson's own words.
DASHBOARD: dict[str, dict[str, str]] = {
    "en": {
        "lang": "en", "title": "Assignment dashboard", "assignments": "Assignments", "assignment": "Assignment",
        "course": "Course", "students": "students", "submissions": "submissions", "none": "No assignment has submissions "
        "with a student id yet.", "open": "open the dashboard",
        "overview": "At a glance", "pass_rate": "Pass rate", "passed_of": "{passed} of {graded} students passed",
        "graded": "graded", "not_gradable": "not gradable (ours)", "in_progress": "queued or being graded",
        "unattributed": "submissions without a student id (not counted)",
        "scores": "Scores of each student's latest graded submission",
        "scores_chart": "Histogram: students per score, {passed} of {students} passing; pass line at {line}",
        "pass_line": "pass line {line}", "score": "score", "passing": "passing", "not_passing": "not passing",
        "attempts": "Attempts until passing", "attempts_col": "graded attempts", "not_yet": "not passed yet",
        "rules": "Vetoes and unmet requirements", "rule": "rule", "kind": "kind", "ever": "students (any attempt)",
        "latest": "still at latest", "veto": "veto", "requirement": "requirement", "no_rules": "None.",
        "diagnoses": "Diagnoses, by students", "diagnosis": "diagnosis", "examples": "examples",
        "no_diagnoses": "No diagnosis in any graded submission.",
        "per_item": "Per exercise item", "families": "Case families: share of students failing (latest submission)",
        "family": "case family", "failing": "failing", "failed_ever": "failed at some attempt",
        "family_regular": "regular", "family_boundary": "boundary", "family_probe": "probe", "family_given": "given check",
        "concepts": "Written questions: concepts found and missed (latest submission)", "question": "question",
        "concept": "concept", "found": "found", "missed": "missed", "no_concepts": "No written answers scored.",
        "hints": "Hint levels: no hint ladder in the reports yet.",
        "time": "Over time", "per_hour": "Submissions per hour and queue depth",
        "per_hour_chart": "Columns: submissions per hour; line: queue depth at the end of each hour",
        "latency": "Grading latency (first report − received), by hour received",
        "latency_chart": "Lines: grading latency p50 and p95 in seconds, by hour received",
        "hour": "hour (UTC)", "queue": "queue depth", "p50": "p50 (s)", "p95": "p95 (s)",
        "latency_all": "all submissions: p50 {p50} s, p95 {p95} s; peak queue depth {peak}",
        "deadline": "deadline", "set_deadline": "Deadline (UTC)", "show": "Show", "csv": "CSV", "json": "JSON",
        "other_lang": "中文", "back": "all assignments", "empty": "Nobody has submitted to this assignment yet.",
        "keys": "Keys: Tab moves between sections and links; the skip links at the top jump to each section.",
    },
    "zh": {
        "lang": "zh-CN", "title": "作业看板", "assignments": "作业", "assignment": "作业", "course": "课程",
        "students": "名学生", "submissions": "份提交", "none": "还没有带学生编号的提交。", "open": "打开看板",
        "overview": "概览", "pass_rate": "通过率", "passed_of": "{graded} 名学生中 {passed} 名通过",
        "graded": "已评分", "not_gradable": "无法评分（我们的问题）", "in_progress": "排队或评分中",
        "unattributed": "没有学生编号的提交（不计入）",
        "scores": "每名学生最近一次评分的得分",
        "scores_chart": "直方图：各分数段的学生数，{students} 名中 {passed} 名通过；及格线 {line}",
        "pass_line": "及格线 {line}", "score": "得分", "passing": "通过", "not_passing": "未通过",
        "attempts": "通过前的提交次数", "attempts_col": "评分次数", "not_yet": "尚未通过",
        "rules": "否决项与未满足的要求", "rule": "规则", "kind": "类别", "ever": "学生数（任一次提交）",
        "latest": "最近一次仍有", "veto": "否决", "requirement": "要求", "no_rules": "无。",
        "diagnoses": "诊断（按学生数排序）", "diagnosis": "诊断", "examples": "示例",
        "no_diagnoses": "评分过的提交中没有诊断。",
        "per_item": "按评分项", "families": "用例类别：未通过的学生比例（最近一次提交）",
        "family": "用例类别", "failing": "未通过", "failed_ever": "曾经未通过",
        "family_regular": "常规", "family_boundary": "边界", "family_probe": "探针", "family_given": "给定检查",
        "concepts": "简答题：讲到与漏掉的概念（最近一次提交）", "question": "题目", "concept": "概念",
        "found": "讲到", "missed": "漏掉", "no_concepts": "没有评分过的简答。",
        "hints": "提示层级：报告里还没有提示阶梯。",
        "time": "随时间", "per_hour": "每小时提交数与排队长度",
        "per_hour_chart": "柱：每小时提交数；线：每小时结束时的排队长度",
        "latency": "评分延迟（第一份报告 − 收到），按收到的小时",
        "latency_chart": "线：评分延迟的 p50 与 p95（秒），按收到的小时",
        "hour": "小时（UTC）", "queue": "排队长度", "p50": "p50（秒）", "p95": "p95（秒）",
        "latency_all": "全部提交：p50 {p50} 秒，p95 {p95} 秒；排队最长 {peak}",
        "deadline": "截止", "set_deadline": "截止时间（UTC）", "show": "显示", "csv": "CSV", "json": "JSON",
        "other_lang": "English", "back": "全部作业", "empty": "这个作业还没有提交。",
        "keys": "键盘：Tab 在各部分与链接间移动；页首的跳转链接直达各部分。",
    },
}
