#!/usr/bin/env python3
"""YAML chores for scripts/check-nightly-config.sh and scripts/nightly-dry-run.sh (run
with target/validators/venv's python, which has PyYAML: kubernetes-validate depends on
it).

  workflow-scripts WORKFLOW OUTDIR   write each bash/sh `run:` script of a GitHub workflow
                                     to OUTDIR, ${{ }} expressions blanked out the way
                                     actionlint does before it calls shellcheck
  k8s-scripts MANIFEST OUTDIR        write each `sh -c SCRIPT` / `bash -c SCRIPT` of the
                                     containers in a Kubernetes manifest to OUTDIR
  count-docs MANIFEST                print the number of non-empty YAML documents
  break-job MANIFEST OUT MODE        write a copy of MANIFEST with every Job broken:
                                     MODE unknown-field | wrong-type | deep-unknown-field |
                                     bad-script
  break-workflow-script WORKFLOW OUT write a copy of WORKFLOW whose first `run: |` block
                                     starts with an unquoted expansion (shellcheck SC2086)

For scripts/nightly-dry-run.sh, which runs the files' command lines as a runner would:
  workflow-matrix WORKFLOW JOB KEY   print the values of matrix KEY of JOB, one a line
  workflow-step WORKFLOW JOB STEP OUTDIR [CTX=VALUE...]
                                     the step of JOB whose name starts with STEP (or, for
                                     STEP `uses:PREFIX`, whose `uses:` starts with PREFIX),
                                     as a runner would run it: ${{ }} expressions are
                                     evaluated with the contexts given (matrix.shard=3,
                                     inputs.minutes=0.03, steps.merge.outputs.found=8) and
                                     env (workflow, job, then step `env:`). Writes
                                     OUTDIR/run.sh (the `run:` script, if any) and
                                     OUTDIR/step.sh, for bash to source: step_name,
                                     step_argv (the shell command line GitHub runs the
                                     script with, `{0}` replaced by run.sh), step_env
                                     (NAME=VALUE...), step_with_KEY (each `with:` input),
                                     step_working_directory, step_continue_on_error.
                                     An expression it cannot evaluate is an error.
  k8s-container MANIFEST OUTDIR [OLD=NEW...]
                                     the Job's container that runs `sh -c SCRIPT`, written
                                     to OUTDIR/container.sh for bash to source: k8s_job,
                                     k8s_completions, k8s_completion_mode, k8s_container,
                                     k8s_argv (command + args, verbatim), k8s_env
                                     (NAME=VALUE... from `env:` values) and k8s_rewritten
                                     (how many paths were rewritten): every OLD=NEW
                                     replaces the absolute path OLD (a whole path
                                     component prefix: /reports, not /reportsX) with NEW
                                     in the argv and env values; nothing else is changed.
                                     Every volumeMount's mountPath must be rewritten.

Extracted scripts are padded with blank lines so that line N of a script file is line N
of the YAML file, and each is listed on stdout as `FILE<TAB>SHELL<TAB>WHERE`. The
workflow is read with yaml.compose (node positions, no `on:` -> True conversion).
"""
import os
import re
import sys

import yaml

SHELLS = {"sh": "sh", "bash": "bash", "dash": "dash", "ash": "sh", "ksh": "ksh"}
EXPR = re.compile(r"\$\{\{.*?\}\}", re.S)


def node_get(mapping, key):
    """Value node of `key` in a MappingNode, or None."""
    if not isinstance(mapping, yaml.MappingNode):
        return None
    for k, v in mapping.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return v
    return None


def scalar(node):
    return node.value if isinstance(node, yaml.ScalarNode) else None


def first_line(node):
    """1-based line in the file where a scalar's text starts."""
    if node.style in ("|", ">"):
        return node.start_mark.line + 2  # block scalar: text begins on the next line
    return node.start_mark.line + 1


def write_script(outdir, name, node, text):
    path = os.path.join(outdir, name)
    with open(path, "w") as f:
        f.write("\n" * (first_line(node) - 1) + text)
    return path


def shell_of(shell):
    """shellcheck dialect for a workflow `shell:` value, or None if not a POSIX shell."""
    word = shell.split()[0] if shell and shell.split() else "bash"
    return SHELLS.get(os.path.basename(word))


def default_shell(node):
    return scalar(node_get(node_get(node_get(node, "defaults"), "run"), "shell"))


def workflow_scripts(workflow, outdir):
    with open(workflow) as f:
        root = yaml.compose(f)
    wf_shell = default_shell(root)
    jobs = node_get(root, "jobs")
    if not isinstance(jobs, yaml.MappingNode):
        sys.exit(f"{workflow}: no jobs mapping")
    n = 0
    for job_key, job in jobs.value:
        job_shell = default_shell(job) or wf_shell
        steps = node_get(job, "steps")
        if not isinstance(steps, yaml.SequenceNode):
            continue
        for i, step in enumerate(steps.value, 1):
            run = node_get(step, "run")
            if scalar(run) is None:
                continue
            dialect = shell_of(scalar(node_get(step, "shell")) or job_shell or "bash")
            if dialect is None:
                continue  # pwsh, python, ...: not shellcheck's business
            n += 1
            # Same length of underscores, so columns still match the file.
            text = EXPR.sub(lambda m: "_" * len(m.group(0)), run.value)
            path = write_script(outdir, f"workflow-{n}.sh", run, text)
            name = scalar(node_get(step, "name")) or f"step {i}"
            print(f"{path}\t{dialect}\tjob {job_key.value}, step '{name}'")


def container_shell_scripts(node):
    """Yield (container name, dialect, script node) for each `sh -c SCRIPT` found."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from container_shell_scripts(item)
    elif isinstance(node, yaml.MappingNode):
        cmd, args = node_get(node, "command"), node_get(node, "args")
        argv = []
        for part in (cmd, args):
            if isinstance(part, yaml.SequenceNode):
                argv += part.value
        words = [scalar(a) for a in argv]
        if words and words[0] and os.path.basename(words[0]) in SHELLS and "-c" in words:
            i = words.index("-c")
            if i + 1 < len(argv) and isinstance(argv[i + 1], yaml.ScalarNode):
                name = scalar(node_get(node, "name")) or "?"
                yield name, SHELLS[os.path.basename(words[0])], argv[i + 1]
        for _, v in node.value:
            yield from container_shell_scripts(v)


def k8s_scripts(manifest, outdir):
    n = 0
    with open(manifest) as f:
        for doc in yaml.compose_all(f):
            if doc is None:
                continue
            kind = scalar(node_get(doc, "kind")) or "?"
            obj = scalar(node_get(node_get(doc, "metadata"), "name")) or "?"
            for container, dialect, script in container_shell_scripts(doc):
                n += 1
                path = write_script(outdir, f"k8s-{n}.sh", script, script.value)
                print(f"{path}\t{dialect}\t{kind}/{obj}, container {container}")


def count_docs(manifest):
    with open(manifest) as f:
        print(sum(1 for d in yaml.safe_load_all(f) if d is not None))


def break_job(manifest, out, mode):
    with open(manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Job"]
    if not jobs:
        sys.exit(f"{manifest}: no Job document to break")
    for job in jobs:
        spec = job["spec"]
        if mode == "unknown-field":
            spec["bogusField"] = 1
        elif mode == "wrong-type":
            spec["completions"] = "eight"
        elif mode == "deep-unknown-field":
            spec["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
        elif mode == "bad-script":
            c = spec["template"]["spec"]["containers"][0]
            slots = [(k, j) for k in ("command", "args") for j in range(len(c.get(k) or []))]
            words = [c[k][j] for k, j in slots]
            if "-c" not in words[:-1]:
                sys.exit(f"{manifest}: the Job's first container runs no `sh -c` script")
            k, j = slots[words.index("-c") + 1]
            c[k][j] = "echo $CHECK_UNQUOTED\n" + c[k][j]
        else:
            sys.exit(f"unknown break mode {mode}")
    with open(out, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


def break_workflow_script(workflow, out):
    with open(workflow) as f:
        lines = f.readlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s*(- )?run: [|>][-+]?\s*$", line) and i + 1 < len(lines):
            indent = re.match(r"^(\s*)", lines[i + 1]).group(1)
            lines.insert(i + 1, f"{indent}echo $CHECK_UNQUOTED\n")
            break
    else:
        sys.exit(f"{workflow}: no `run: |` block to break")
    with open(out, "w") as f:
        f.writelines(lines)


# --- running the files' command lines (scripts/nightly-dry-run.sh) --------------------------


def shell_quote(value):
    return "'" + value.replace("'", "'\\''") + "'"


def write_sourceable(path, assignments):
    """Write `name=value` / `name=(values...)` lines for bash to source."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        for name, value in assignments:
            if isinstance(value, list):
                f.write(f"{name}=({' '.join(shell_quote(v) for v in value)})\n")
            else:
                f.write(f"{name}={shell_quote(value)}\n")


def load_workflow(workflow):
    with open(workflow) as f:
        root = yaml.compose(f)
    if not isinstance(node_get(root, "jobs"), yaml.MappingNode):
        sys.exit(f"{workflow}: no jobs mapping")
    return root


def workflow_job(root, workflow, job_id):
    job = node_get(node_get(root, "jobs"), job_id)
    if not isinstance(job, yaml.MappingNode):
        sys.exit(f"{workflow}: no job {job_id!r}")
    return job


def workflow_matrix(workflow, job_id, key):
    job = workflow_job(load_workflow(workflow), workflow, job_id)
    values = node_get(node_get(node_get(job, "strategy"), "matrix"), key)
    if not isinstance(values, yaml.SequenceNode):
        sys.exit(f"{workflow}: job {job_id} has no list strategy.matrix.{key}")
    for v in values.value:
        if scalar(v) is None:
            sys.exit(f"{workflow}: job {job_id}: matrix.{key} holds a non-scalar value")
        print(scalar(v))


# The part of the expression language the nightly workflow uses: context paths
# (matrix.shard, env.SHARDS, inputs.minutes, steps.merge.outputs.found), string and number
# literals, and `||` (the first truthy operand). Anything else (functions, comparisons,
# `&&`, indexing) is refused, so the dry run never runs a line it guessed at.
LITERAL = re.compile(r"^'((?:[^']|'')*)'$")
NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)+$")
KNOWN_CONTEXTS = ("matrix", "env", "inputs", "steps", "needs", "github", "vars", "secrets", "runner", "job", "strategy")


def split_or(expr):
    """Split on top-level `||` (outside '...' literals)."""
    parts, cur, quoted, i = [], "", False, 0
    while i < len(expr):
        c = expr[i]
        if c == "'":
            quoted = not quoted
        if not quoted and expr.startswith("||", i):
            parts.append(cur)
            cur, i = "", i + 2
            continue
        cur += c
        i += 1
    if quoted:
        raise ValueError("unterminated string literal")
    parts.append(cur)
    return [p.strip() for p in parts]


def eval_operand(op, ctx):
    m = LITERAL.match(op)
    if m:
        return m.group(1).replace("''", "'")
    if NUMBER.match(op):
        return op
    if PATH.match(op) and op.split(".")[0] in KNOWN_CONTEXTS:
        # A context GitHub would supply empty (an input not given, a step output not
        # set) evaluates to '' unless the caller supplied it.
        if op.split(".")[0] in ("inputs", "steps", "needs") or op in ctx:
            return ctx.get(op, "")
        raise ValueError(f"no value given for {op}")
    raise ValueError(f"unsupported expression operand {op!r}")


def eval_expr(expr, ctx):
    value = ""
    for op in split_or(expr):
        if not op:
            raise ValueError("empty operand")
        value = eval_operand(op, ctx)
        if value not in ("", "false", "0"):
            return value
    return value


def substitute(text, ctx, where):
    def one(m):
        try:
            return eval_expr(m.group(0)[3:-2].strip(), ctx)
        except ValueError as e:
            sys.exit(f"{where}: cannot evaluate {m.group(0)}: {e}")

    return EXPR.sub(one, text)


def env_of(node, ctx, where):
    env = node_get(node, "env")
    out = []
    if env is None:
        return out
    if not isinstance(env, yaml.MappingNode):
        sys.exit(f"{where}: env is not a mapping")
    for k, v in env.value:
        if scalar(v) is None:
            sys.exit(f"{where}: env {k.value} is not a scalar")
        out.append((k.value, substitute(v.value, ctx, f"{where}, env {k.value}")))
    return out


# How GitHub runs a `run:` script on Linux, by `shell:` (docs: "Using a specific shell").
SHELL_TEMPLATES = {
    None: "bash -e {0}",
    "bash": "bash --noprofile --norc -eo pipefail {0}",
    "sh": "sh -e {0}",
}


def workflow_step(workflow, job_id, step_sel, outdir, *ctx_args):
    root = load_workflow(workflow)
    job = workflow_job(root, workflow, job_id)
    ctx = {}
    for arg in ctx_args:
        if "=" not in arg:
            sys.exit(f"context value {arg!r} is not NAME=VALUE")
        k, v = arg.split("=", 1)
        ctx[k] = v
    steps = node_get(job, "steps")
    if not isinstance(steps, yaml.SequenceNode):
        sys.exit(f"{workflow}: job {job_id} has no steps")
    if step_sel.startswith("uses:"):
        want = lambda s: (scalar(node_get(s, "uses")) or "").startswith(step_sel[5:])
    else:
        want = lambda s: (scalar(node_get(s, "name")) or "").startswith(step_sel)
    found = [s for s in steps.value if want(s)]
    if len(found) != 1:
        sys.exit(f"{workflow}: job {job_id}: {len(found)} steps match {step_sel!r} (want 1)")
    step = found[0]
    where = f"{workflow}: job {job_id}, step {step_sel!r}"
    # env context: workflow, then job, then step (a later one wins). Each level's values
    # may use the env context of the levels above.
    env = {}
    for node, level in ((root, "workflow"), (job, "job"), (step, "step")):
        env_ctx = dict(ctx)
        env_ctx.update({f"env.{k}": v for k, v in env.items()})
        for k, v in env_of(node, env_ctx, f"{where} ({level} env)"):
            env[k] = v
    ctx.update({f"env.{k}": v for k, v in env.items()})
    name = substitute(scalar(node_get(step, "name")) or "", ctx, where)
    out = [("step_name", name), ("step_env", [f"{k}={v}" for k, v in env.items()])]
    run = node_get(step, "run")
    if run is not None:
        if scalar(run) is None:
            sys.exit(f"{where}: run is not a string")
        os.makedirs(outdir, exist_ok=True)
        script = os.path.join(os.path.abspath(outdir), "run.sh")
        with open(script, "w") as f:
            f.write(substitute(run.value, ctx, where))
        shell = (scalar(node_get(step, "shell")) or default_shell(job) or default_shell(root))
        template = SHELL_TEMPLATES.get(shell, shell)
        if "{0}" not in template:
            template += " {0}"  # a custom shell without {0}: GitHub appends the path
        out.append(("step_argv", [w.replace("{0}", script) for w in template.split()]))
        wd = scalar(node_get(node_get(node_get(job, "defaults"), "run"), "working-directory"))
        wd = scalar(node_get(step, "working-directory")) or wd or scalar(
            node_get(node_get(node_get(root, "defaults"), "run"), "working-directory"))
        out.append(("step_working_directory", substitute(wd or "", ctx, where)))
    coe = node_get(step, "continue-on-error")
    out.append(("step_continue_on_error", substitute(scalar(coe) or "false", ctx, where)))
    with_ = node_get(step, "with")
    if isinstance(with_, yaml.MappingNode):
        for k, v in with_.value:
            key = re.sub(r"[^A-Za-z0-9_]", "_", k.value)
            out.append((f"step_with_{key}", substitute(scalar(v) or "", ctx, f"{where}, with.{k.value}")))
    write_sourceable(os.path.join(outdir, "step.sh"), out)


def rewrite_paths(text, rewrites):
    """Replace each absolute path prefix OLD (followed by `/`, a non-path character or the
    end) with NEW; return (text, count)."""
    total = 0
    for old, new in rewrites:
        pattern = re.compile(r"(?<![A-Za-z0-9_./-])" + re.escape(old) + r"(?=/|[^A-Za-z0-9_.-]|$)")
        text, n = pattern.subn(lambda m: new, text)
        total += n
    return text, total


def k8s_container(manifest, outdir, *rewrite_args):
    rewrites = []
    for arg in rewrite_args:
        old, sep, new = arg.partition("=")
        if not sep or not old.startswith("/"):
            sys.exit(f"rewrite {arg!r} is not /OLD=NEW")
        rewrites.append((old, new))
    with open(manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") == "Job"]
    if len(jobs) != 1:
        sys.exit(f"{manifest}: {len(jobs)} Job documents (want 1)")
    job = jobs[0]
    spec = job.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    runs_sh = []
    for c in pod.get("containers") or []:
        argv = [str(w) for w in (c.get("command") or []) + (c.get("args") or [])]
        if argv and os.path.basename(argv[0]) in SHELLS and "-c" in argv[:-1]:
            runs_sh.append((c, argv))
    if len(runs_sh) != 1:
        sys.exit(f"{manifest}: {len(runs_sh)} containers of the Job run `sh -c` (want 1)")
    c, argv = runs_sh[0]
    if c.get("workingDir"):
        sys.exit(f"{manifest}: container {c.get('name')}: workingDir is not supported here")
    # A mount left unrewritten would make the script write to that absolute path on this
    # machine: refuse.
    for m in c.get("volumeMounts") or []:
        path = str(m.get("mountPath", ""))
        if not any(path == old or path.startswith(old.rstrip("/") + "/") for old, _ in rewrites):
            sys.exit(f"{manifest}: container {c.get('name')}: mountPath {path} is not rewritten")
    env = []
    for e in c.get("env") or []:
        if "value" not in e:
            sys.exit(f"{manifest}: container {c.get('name')}: env {e.get('name')} has no plain value")
        env.append((e["name"], str(e["value"])))
    total = 0
    new_argv = []
    for w in argv:
        w, n = rewrite_paths(w, rewrites)
        new_argv.append(w)
        total += n
    new_env = []
    for k, v in env:
        v, n = rewrite_paths(v, rewrites)
        new_env.append(f"{k}={v}")
        total += n
    write_sourceable(os.path.join(outdir, "container.sh"), [
        ("k8s_job", str((job.get("metadata") or {}).get("name", "?"))),
        ("k8s_completions", str(spec.get("completions", ""))),
        ("k8s_completion_mode", str(spec.get("completionMode", "NonIndexed"))),
        ("k8s_container", str(c.get("name", "?"))),
        ("k8s_argv", new_argv),
        ("k8s_env", new_env),
        ("k8s_rewritten", str(total)),
    ])


def main(argv):
    cmds = {
        "workflow-scripts": (workflow_scripts, 2),
        "k8s-scripts": (k8s_scripts, 2),
        "count-docs": (count_docs, 1),
        "break-job": (break_job, 3),
        "break-workflow-script": (break_workflow_script, 2),
        "workflow-matrix": (workflow_matrix, 3),
        "workflow-step": (workflow_step, -4),  # negative: at least that many
        "k8s-container": (k8s_container, -2),
    }
    if len(argv) < 2 or argv[1] not in cmds:
        sys.exit(__doc__)
    want, got = cmds[argv[1]][1], len(argv) - 2
    if (want >= 0 and got != want) or (want < 0 and got < -want):
        sys.exit(__doc__)
    cmds[argv[1]][0](*argv[2:])


if __name__ == "__main__":
    main(sys.argv)
