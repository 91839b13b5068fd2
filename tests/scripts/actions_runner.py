"""A test driver, not nektos/act: it runs one GitHub Actions job, composite actions included, on this
machine as the GitHub runner would, for tests that cannot use Docker. Whatever it does not implement
raises Unsupported, naming it; nothing is skipped silently.

Supported. on: a string, list or mapping; push (branches, branches-ignore: names, * and ** globs),
pull_request (the same, on the base branch; types against payload["action"], by default opened,
synchronize, reopened), workflow_dispatch and schedule without filters. A job: name, if, runs-on
(labels), needs (results passed in), env, permissions (recorded), timeout-minutes (a deadline),
concurrency (ignored), defaults.run (bash, working-directory), outputs, steps. A step: name, id, if,
run (`bash -e {0}` when no shell is named, `bash --noprofile --norc -e -o pipefail {0}` for shell:
bash, as the runner does), working-directory, env, uses (the caller's `actions` map: a callable, or
a composite action's folder), with, continue-on-error, timeout-minutes, and the GITHUB_OUTPUT,
GITHUB_ENV, GITHUB_PATH and GITHUB_STEP_SUMMARY files. Expressions, by a tokenizer and a recursive-
descent parser (never eval): GitHub's literals, contexts (github env inputs steps needs runner job
secrets), operators, loose equality, truthiness, and contains startsWith endsWith format join
toJSON fromJSON and the status functions.
Not supported: strategy/matrix, container, services, reusable workflows, JavaScript and Docker
actions (map them to a callable), hashFiles, object filters (a.*), vars, ::set-output, masking.
"""
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

import yaml


class Unsupported(Exception):
    """A workflow, action or expression feature this driver does not implement."""


class WorkflowError(ValueError):
    """A workflow, action or call that GitHub would reject too."""


class ExpressionError(WorkflowError):
    """An expression that does not parse, or that calls a function wrongly."""


class JobSkipped(Exception):
    """Raised by JobResult.check_ran; run_job itself returns a result with ran False."""


@dataclass
class JobResult:
    """steps: {name, id, outcome, conclusion, exit_code, outputs} each (a composite action's with its
    own steps); permissions: the job's permissions:, else the workflow's, else None; reason: why
    the job did not run, or which step failed; inline_expressions: each ${{ }} met in a run: script."""
    ran: bool = False
    reason: str = ''
    conclusion: str = 'skipped'
    steps: list = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    summary: str = ''
    permissions: object = None
    inline_expressions: list = field(default_factory=list)
    log: str = ''
    exit_code: int = 0

    def check_ran(self):
        if not self.ran:
            raise JobSkipped(self.reason)
        return self


# ---- expressions ------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(?P<num>-?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))"
                    r"|(?P<str>'(?:[^']|'')*')|(?P<id>[A-Za-z_][A-Za-z0-9_-]*)"
                    r"|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\].,*]))")
_FUNCS = {'contains': (2, 2), 'startswith': (2, 2), 'endswith': (2, 2), 'format': (1, 99), 'join': (1, 2),
          'tojson': (1, 1), 'fromjson': (1, 1), 'success': (0, 0), 'always': (0, 0), 'failure': (0, 0),
          'cancelled': (0, 0)}
_STATUS = ('success', 'always', 'failure', 'cancelled')
_CONTEXTS = ('github', 'env', 'inputs', 'steps', 'needs', 'runner', 'job', 'secrets')


def _tokenize(src):
    toks, pos = [], 0
    while src[pos:].strip():
        m = _TOKEN.match(src, pos)
        if not m:
            raise ExpressionError(f'unexpected {src[pos:].strip()[:12]!r} in expression {src!r}')
        kind, text, pos = m.lastgroup, m.group(m.lastgroup), m.end()
        if kind == 'num':
            text = int(text, 16) if 'x' in text.lower() else float(text) if re.search('[.eE]', text) else int(text)
        toks.append((kind, text[1:-1].replace("''", "'") if kind == 'str' else text))
    return toks + [(None, None)]


class _Parser:
    """Recursive descent, loosest first: || && (== !=) (< <= > >=), then ! and a.b a[b] f(x)."""
    LEVELS = (('||',), ('&&',), ('==', '!='), ('<', '<=', '>', '>='))

    def __init__(self, src):
        self.src, self.toks, self.i = src, _tokenize(src), 0

    def fail(self, why):
        raise ExpressionError(f'{why} in expression {self.src!r}')

    def take(self, *ops):
        """The next token, (kind, value); with ops, its value if it is one of them, else None (not taken)."""
        kind, val = self.toks[self.i]
        if ops and (kind != 'op' or val not in ops):
            return None
        if kind is None:
            self.fail('unexpected end')
        self.i += 1
        return val if ops else (kind, val)

    def expect(self, op):
        if not self.take(op):
            self.fail(f'expected {op!r}')

    def parse(self, level=0):
        if level == len(self.LEVELS):
            return self.unary()
        node = self.parse(level + 1)
        while op := self.take(*self.LEVELS[level]):
            node = ('op', op, node, self.parse(level + 1))
        return node

    def unary(self):
        if self.take('!'):
            return ('not', self.unary())
        node = self.primary()
        while op := self.take('.', '['):
            if self.take('*'):
                raise Unsupported(f'object filter (.*) in expression {self.src!r}')
            if op == '[':
                node = ('get', node, self.parse())
                self.expect(']')
            elif self.toks[self.i][0] == 'id':
                node = ('get', node, ('lit', self.take()[1]))
            else:
                self.fail('expected a property name after .')
        return node

    def primary(self):
        kind, val = self.take()
        if kind in ('num', 'str'):
            return ('lit', val)
        if kind == 'op':
            if val != '(':
                self.fail(f'unexpected {val!r}')
            node = self.parse()
            self.expect(')')
            return node
        if val in ('true', 'false', 'null'):
            return ('lit', {'true': True, 'false': False, 'null': None}[val])
        if not self.take('('):
            return ('ctx', val.lower())
        args = []
        while not self.take(')'):
            if args:
                self.expect(',')
            args.append(self.parse())
        low, high = _FUNCS.get(val.lower(), (None, None))
        if low is None:
            raise Unsupported(f'function {val}() in expression {self.src!r}')
        if not low <= len(args) <= high:
            self.fail(f'{val}() takes {low} to {high} arguments')
        return ('call', val.lower(), tuple(args))


def _parse(src):
    parser = _Parser(src)
    node = parser.parse()
    if parser.toks[parser.i][0] is not None:
        parser.fail(f'unexpected {parser.toks[parser.i][1]!r}')
    return node


def _walk(node):
    yield node
    for child in node[2] if node[0] == 'call' else node[1:] if node[0] in ('get', 'not', 'op') else ():
        if isinstance(child, tuple):
            yield from _walk(child)


def _kind(v):
    for kind, types in (('null', type(None)), ('bool', bool), ('num', (int, float)), ('str', str),
                        ('array', list), ('object', dict)):
        if isinstance(v, types):
            return kind
    raise WorkflowError(f'not an expression value: {v!r}')


def _number(v):
    kind = _kind(v)
    if kind in ('null', 'bool', 'num'):
        return float(v or 0)
    s = v.strip() if kind == 'str' else 'NaN'
    if re.fullmatch(r'[+-]?0x[0-9a-fA-F]+', s):
        return float(int(s, 16))
    return float(s or 0) if re.fullmatch(r'[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|', s) else math.nan


def _truthy(v):
    kind = _kind(v)
    if kind == 'num':
        return not (v == 0 or math.isnan(v))
    return bool(v) if kind in ('null', 'bool', 'str') else True


def _equal(a, b):
    """GitHub's ==: across kinds, both as numbers (null 0, true 1, '' 0, 'x' NaN); text ignores case."""
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return _number(a) == _number(b)
    if ka == 'str':
        return a.upper() == b.upper()
    return a is b if ka in ('array', 'object') else a == b


def _compare(op, a, b):
    x, y = (a.upper(), b.upper()) if _kind(a) == _kind(b) == 'str' else (_number(a), _number(b))
    return {'<': x < y, '<=': x <= y, '>': x > y, '>=': x >= y}[op]


def _text(v):
    """A value as GitHub writes it into text: null '', true, 1 (not 1.0), 1E+20."""
    kind = _kind(v)
    if kind in ('array', 'object'):
        raise Unsupported('an object or array where text is needed (GitHub writes Object/Array): use toJSON()')
    if kind != 'num':
        return v if kind == 'str' else {None: '', True: 'true', False: 'false'}[v]
    if math.isnan(v) or math.isinf(v):
        return 'NaN' if math.isnan(v) else 'Infinity' if v > 0 else '-Infinity'
    return format(float(v), '.15g').replace('e', 'E')  # .NET's G15


def _format(fmt, args):
    def one(m):
        if m.group(1) is not None and int(m.group(1)) < len(args):
            return args[int(m.group(1))]
        if m.group(0) in ('{{', '}}'):
            return m.group(0)[0]
        raise ExpressionError(f'format(): {m.group(0)!r} in {fmt!r} has no argument or no pair')
    return re.sub(r'\{\{|\}\}|\{([0-9]+)\}|[{}]', one, fmt)


def _call(name, args, status):
    if name in _STATUS:
        if status is None:
            raise ExpressionError(f'{name}() is only allowed in if:')
        return {'always': True, 'cancelled': False}.get(name, status == name)
    if name == 'contains':
        if _kind(args[0]) == 'array':
            return any(_equal(x, args[1]) for x in args[0])
        return _text(args[1]).upper() in _text(args[0]).upper()
    if name in ('startswith', 'endswith'):
        s, affix = _text(args[0]).upper(), _text(args[1]).upper()
        return s.startswith(affix) if name == 'startswith' else s.endswith(affix)
    if name == 'format':
        return _format(_text(args[0]), [_text(a) for a in args[1:]])
    if name == 'join':
        sep = _text(args[1]) if len(args) > 1 else ','
        return sep.join(map(_text, args[0])) if _kind(args[0]) == 'array' else _text(args[0])
    if name == 'tojson':
        return json.dumps(args[0], indent=2, ensure_ascii=False)
    try:
        return json.loads(_text(args[0]))
    except json.JSONDecodeError as e:
        raise ExpressionError(f'fromJSON(): {e}') from None


def _index(obj, key):
    if isinstance(obj, dict) and isinstance(key, str):
        same = (v for k, v in obj.items() if isinstance(k, str) and k.upper() == key.upper())
        return obj[key] if key in obj else next(same, None)
    if isinstance(obj, list) and _kind(key) == 'num' and float(key).is_integer() and 0 <= key < len(obj):
        return obj[int(key)]
    return None  # a missing property is null, as on GitHub


def _eval(node, ctx, status):
    kind = node[0]
    if kind == 'lit':
        return node[1]
    if kind == 'ctx':
        return ctx[node[1]]
    if kind == 'get':
        return _index(_eval(node[1], ctx, status), _eval(node[2], ctx, status))
    if kind == 'not':
        return not _truthy(_eval(node[1], ctx, status))
    if kind == 'call':
        return _call(node[1], [_eval(a, ctx, status) for a in node[2]], status)
    op, left = node[1], _eval(node[2], ctx, status)
    if op in ('&&', '||'):  # the deciding operand itself, not a bool
        return _eval(node[3], ctx, status) if _truthy(left) == (op == '&&') else left
    right = _eval(node[3], ctx, status)
    return _equal(left, right) == (op == '==') if op in ('==', '!=') else _compare(op, left, right)


def evaluate(src, contexts, status=None):
    """The value of one expression (the text inside ${{ }}). contexts: name -> value, those readable
    here; status: 'success' or 'failure' (the job's or action's) in an if:, None elsewhere."""
    node = _parse(src)
    for n in _walk(node):
        if n[0] == 'ctx' and n[1] not in contexts:
            error = ExpressionError if n[1] in _CONTEXTS else Unsupported
            raise error(f'{n[1]!r} is not a context here: {src!r}')
    return _eval(node, contexts, status)


def _pieces(text):
    """text split at each ${{ }}: [(is_expression, text or source, raw)]."""
    out, i = [], 0
    while (j := text.find('${{', i)) >= 0:
        k, quoted = j + 3, False
        while k < len(text) and (quoted or not text.startswith('}}', k)):
            quoted ^= text[k] == "'"
            k += 1
        if k >= len(text):
            raise ExpressionError(f'unterminated ${{{{ in {text!r}')
        out += [(False, text[i:j], text[i:j]), (True, text[j + 3:k], text[j:k + 2])]
        i = k + 2
    return out + [(False, text[i:], text[i:])]


def interpolate(value, contexts, status=None):
    """A workflow value with its ${{ }} replaced: a string that is one ${{ }} (whitespace aside)
    gives that expression's value; any other string gives a string."""
    if not isinstance(value, str) or '${{' not in value:
        return value
    parts = _pieces(value)
    exprs = [p[1] for p in parts if p[0]]
    if len(exprs) == 1 and not ''.join(p[1] for p in parts if not p[0]).strip():
        return evaluate(exprs[0], contexts, status)
    return ''.join(_text(evaluate(p[1], contexts, status)) if p[0] else p[1] for p in parts)


def _string(value, contexts):
    return _text(interpolate(value, contexts))


def condition(cond, contexts, status):
    """Whether an if: holds: a bare expression or ${{ }} text, with success() && before it unless
    it calls a status function; cond None is success(). status: as evaluate's."""
    text = 'success()' if cond is None else _text(cond).strip()
    sources = [p[1] for p in _pieces(text) if p[0]] or [text]
    if status != 'success' and not any(n[0] == 'call' and n[1] in _STATUS for s in sources for n in _walk(_parse(s))):
        return False
    return _truthy(interpolate(text if '${{' in text else '${{ ' + text + ' }}', contexts, status))


# ---- workflows --------------------------------------------------------------------------------
class _Loader(yaml.SafeLoader):
    """YAML as GitHub reads it: only true/false are booleans (on, yes, off stay strings)."""


_Loader.yaml_implicit_resolvers = {k: [r for r in v if r[0] != 'tag:yaml.org,2002:bool']
                                   for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver('tag:yaml.org,2002:bool', re.compile('^(?:true|True|TRUE|false|False|FALSE)$'),
                              list('tTfF'))
_WORKFLOW_KEYS = {'name', 'run-name', 'on', 'permissions', 'env', 'defaults', 'concurrency', 'jobs'}
_JOB_KEYS = {'name', 'runs-on', 'needs', 'if', 'env', 'permissions', 'timeout-minutes', 'concurrency',
             'defaults', 'steps', 'outputs'}
_STEP_KEYS = {'name', 'id', 'if', 'run', 'uses', 'with', 'env', 'shell', 'working-directory',
              'continue-on-error', 'timeout-minutes'}
_ACTION_KEYS = {'name', 'description', 'author', 'inputs', 'outputs', 'runs', 'branding'}
_FILTERS = {'push': {'branches', 'branches-ignore'}, 'pull_request': {'branches', 'branches-ignore', 'types'},
            'workflow_dispatch': set(), 'schedule': set()}
_FILES = ('GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_STEP_SUMMARY')
TOKEN = 'ghs_actions-runner-dummy-token'


def _load(path):
    with open(path, encoding='utf-8') as f:
        doc = yaml.load(f, Loader=_Loader)
    if isinstance(doc, dict) and True in doc:  # `on`, as a YAML 1.1 loader reads it
        doc['on'] = doc.pop(True)
    return doc


def _only(mapping, allowed, where):
    if not isinstance(mapping, dict):
        raise WorkflowError(f'{where} must be a mapping')
    if extra := sorted(set(map(str, mapping)) - set(allowed)):
        raise Unsupported(f'{where}: {", ".join(extra)}')


def _glob(pattern):
    if not isinstance(pattern, str) or re.search(r'[?+\[\]!]', pattern):
        raise Unsupported(f'branch pattern {pattern!r} (only names and * ** globs)')
    return re.compile('.*'.join('[^/]*'.join(map(re.escape, p.split('*'))) for p in pattern.split('**')))


def _event_filter(on, event, payload):
    """Why the workflow does not run for this event ('' when it does)."""
    if event not in _FILTERS:
        raise Unsupported(f'event {event!r}')
    on = {on: None} if isinstance(on, str) else dict.fromkeys(on) if isinstance(on, list) else on
    if not isinstance(on, dict):
        raise WorkflowError('on: must be a string, a list or a mapping')
    if event not in on:
        return 'event not in on:'
    spec = on[event] or {}
    if event == 'schedule':
        return ''
    _only(spec, _FILTERS[event], f'on.{event}')
    ref = payload.get('ref', '')
    if event == 'pull_request':
        types = spec.get('types', ['opened', 'synchronize', 'reopened'])
        ref = 'refs/heads/' + payload['pull_request']['base']['ref']
        if payload.get('action') not in ([types] if isinstance(types, str) else types):
            return f'pull_request action {payload.get("action")!r} not in on.pull_request.types'
    for key in ('branches', 'branches-ignore'):
        if key in spec and not ref.startswith('refs/heads/'):
            return f'on.{event}.{key}: {ref} is not a branch'
        pats = spec.get(key) if isinstance(spec.get(key), list) else [spec.get(key)]
        if key in spec and any(_glob(p).fullmatch(ref[11:]) for p in pats) != (key == 'branches'):
            return f'on.{event}.{key}: branch {ref[11:]!r} filtered out'
    return ''


def _github_context(event, payload, workspace, event_path, workflow, job_id):
    try:
        repo, head, base = payload['repository']['full_name'], '', ''
        if event == 'pull_request':
            pr = payload['pull_request']
            ref, sha = f'refs/pull/{pr["number"]}/merge', pr['head']['sha']
            head, base = pr['head']['ref'], pr['base']['ref']
        else:
            ref = payload.get('ref') or 'refs/heads/' + payload['repository']['default_branch']
            sha = payload['after'] if event == 'push' else payload.get('sha', '')
    except (KeyError, TypeError) as e:
        raise WorkflowError(f'the {event} payload lacks {e}') from None
    return {'event_name': event, 'event': payload, 'event_path': event_path, 'ref': ref, 'sha': sha,
            'ref_name': ref.split('/', 2)[-1], 'ref_type': 'tag' if ref.startswith('refs/tags/') else 'branch',
            'repository': repo, 'repository_owner': repo.split('/')[0], 'workspace': workspace,
            'run_id': '4242424242', 'run_number': '1', 'run_attempt': '1', 'head_ref': head, 'base_ref': base,
            'actor': (payload.get('sender') or {}).get('login', ''), 'token': TOKEN, 'job': job_id,
            'workflow': workflow, 'server_url': 'https://github.com', 'api_url': 'https://api.github.com'}


def _env_block(block, contexts):
    if not isinstance(block or {}, dict):
        raise Unsupported(f'env: that is not a mapping ({block!r})')
    return {str(k): _string(v, contexts) for k, v in (block or {}).items()}


def _read_kv(path):
    """A GITHUB_OUTPUT or GITHUB_ENV file as the runner reads it: name=value, or name<<DELIM, lines, DELIM."""
    with open(path, encoding='utf-8') as f:
        lines, out = iter([line.removesuffix('\r') for line in f.read().split('\n')]), {}
    for line in filter(None, lines):  # the lines of a heredoc come from `lines` itself, blank ones too
        eq, doc = line.find('='), line.find('<<')
        if eq >= 0 and (doc < 0 or eq < doc):
            key, value = line[:eq], line[eq + 1:]
        elif doc >= 0:
            key, delim, body = line[:doc], line[doc + 2:], []
            while (more := next(lines, None)) != delim:
                if more is None:
                    raise WorkflowError(f'{os.path.basename(path)}: no line {delim!r} ends {key!r}')
                body.append(more)
            value = '\n'.join(body)
        else:
            raise WorkflowError(f'{os.path.basename(path)}: invalid line {line!r}')
        if not key:
            raise WorkflowError(f'{os.path.basename(path)}: a line with no name: {line!r}')
        out[key] = value
    return out


class _TimedOut(Exception):
    pass


class _Frame:
    """One list of steps: the job's, or a composite action's, with its own steps context, inputs,
    status and the env: of the uses: steps around it."""

    def __init__(self, entries, inputs, layers=(), action_path=None):
        self.entries, self.inputs, self.layers, self.action_path = entries, inputs, list(layers), action_path
        self.steps, self.status, self.exit_code, self.failed = {}, 'success', 0, None


class _Job:
    def __init__(self, result, github, needs, base_env, actions, secrets, temp, deadline, defaults):
        self.result, self.github, self.needs, self.base_env = result, github, needs, base_env
        self.actions, self.secrets, self.temp, self.deadline, self.defaults = actions, secrets, temp, deadline, defaults
        self.runner = {'os': 'Linux', 'arch': 'X64', 'temp': temp, 'name': 'actions-runner'}
        self.job_env, self.global_env, self.path, self.log, self.groups = {}, {}, [], [], []
        self.frame, self.n = None, 0

    def contexts(self, frame, env, secrets=True):
        github = dict(self.github, action_path=frame.action_path) if frame.action_path else self.github
        ctx = {'github': github, 'env': env, 'inputs': frame.inputs, 'steps': frame.steps, 'needs': self.needs,
               'runner': self.runner, 'job': {'status': self.frame.status}}
        return dict(ctx, secrets=self.secrets) if secrets and not frame.action_path else ctx

    def process_env(self, frame, env, files):
        out = {**self.base_env, **env}
        out.update({f'GITHUB_{k.upper()}': v for k, v in self.github.items() if k not in ('event', 'token')})
        out.update(GITHUB_ACTIONS='true', CI='true', RUNNER_OS='Linux', RUNNER_ARCH='X64', RUNNER_TEMP=self.temp)
        out.update(files)
        if frame.action_path:
            out['GITHUB_ACTION_PATH'] = frame.action_path
        if self.path:
            out['PATH'] = os.pathsep.join(self.path[::-1] + ([out['PATH']] if out.get('PATH') else []))
        return out

    def run_steps(self, steps, frame):
        if not isinstance(steps, list) or not steps:
            raise WorkflowError('steps: must be a non-empty list')
        for step in steps:
            _only(step, _STEP_KEYS - ({'timeout-minutes'} if frame.action_path else set()), 'step')
            kind, other = ('run', {'with'}) if 'run' in step else ('uses', {'shell', 'working-directory'})
            if kind not in step or 'run' in step and 'uses' in step or other & set(step):
                raise WorkflowError(f'a step needs run: or uses: (with: only with uses:, shell: with run:): {step}')
            if step.get('id') is not None and str(step['id']) in frame.steps:
                raise WorkflowError(f'two steps with id {step["id"]!r}')
            if isinstance(step.get('run'), str):
                self.result.inline_expressions += [raw for is_expr, _, raw in _pieces(step['run']) if is_expr]
            entry = self.run_step(step, frame)
            if step.get('id') is not None:
                frame.steps[str(step['id'])] = {k: entry[k] for k in ('outputs', 'outcome', 'conclusion')}

    def run_step(self, step, frame):
        env = {**self.job_env, **self.global_env, **{k: v for layer in frame.layers for k, v in layer.items()}}
        ctx = self.contexts(frame, env)
        first = str(step.get('run') or step.get('uses')).strip().split('\n')[0]
        entry = {'name': _string(step['name'], ctx) if 'name' in step else f'Run {first}', 'id': step.get('id'),
                 'outcome': 'skipped', 'conclusion': 'skipped', 'exit_code': None, 'outputs': {}}
        frame.entries.append(entry)
        if not condition(step.get('if'), self.contexts(frame, env, secrets=False), frame.status):
            return entry
        own = _env_block(step.get('env'), ctx)
        ctx['env'] = {**env, **own}
        keep_going = interpolate(step.get('continue-on-error', False), ctx)
        if not isinstance(keep_going, (bool, str)):
            raise WorkflowError(f'continue-on-error: {keep_going!r}')
        self.log.append(f'--- {entry["name"]}\n')
        try:
            code, entry['outputs'] = (self.run_script if 'run' in step else self.run_uses)(step, frame, ctx, own, entry)
        except _TimedOut:
            entry.update(outcome='failure', conclusion='failure', exit_code=124)
            raise
        ok = code == 0 or _truthy(keep_going)
        entry.update(outcome='failure' if code else 'success', conclusion='success' if ok else 'failure')
        entry['exit_code'] = code
        if not ok and frame.status == 'success':
            frame.status, frame.exit_code, frame.failed = 'failure', code, entry['name']
        return entry

    def run_script(self, step, frame, ctx, own, entry):
        shell = step.get('shell') or (None if frame.action_path else self.defaults.get('shell'))
        if shell is None and frame.action_path:
            raise Unsupported(f'a composite run: step without shell: ({entry["name"]}); GitHub requires one')
        if shell not in (None, 'bash'):
            raise Unsupported(f'shell: {shell!r} (only bash)')
        self.n += 1
        files = {k: os.path.join(self.temp, f'{self.n}_{k.lower()}') for k in _FILES}
        script = os.path.join(self.temp, f'{self.n}.sh')
        for path in files.values():
            open(path, 'w').close()
        with open(script, 'w', encoding='utf-8') as f:
            f.write(_string(step['run'], ctx))
        wd = step.get('working-directory') or (None if frame.action_path else self.defaults.get('working-directory'))
        cwd = os.path.join(self.github['workspace'], _string(wd, ctx)) if wd else self.github['workspace']
        env = self.process_env(frame, ctx['env'], files)
        args = ['-e'] if shell is None else ['--noprofile', '--norc', '-e', '-o', 'pipefail']
        deadline = self.deadline
        if minutes := step.get('timeout-minutes'):
            deadline = min(deadline, time.monotonic() + 60 * float(interpolate(minutes, ctx)))
        bash = shutil.which('bash', path=env.get('PATH')) or '/bin/bash'
        code = self.execute([bash, *args, script], env, cwd, deadline)
        with open(files['GITHUB_STEP_SUMMARY'], encoding='utf-8') as f:
            self.result.summary += f.read()
        self.global_env.update(_read_kv(files['GITHUB_ENV']))
        with open(files['GITHUB_PATH'], encoding='utf-8') as f:
            for line in filter(None, f.read().split('\n')):
                self.path = [p for p in self.path if p != line] + [line]
        return code, _read_kv(files['GITHUB_OUTPUT'])

    def execute(self, cmd, env, cwd, deadline):
        if not os.path.isdir(cwd):
            self.log.append(f'Error: no working directory {cwd}\n')
            return 1
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.groups.append(proc.pid)
        timed_out = False
        try:
            out, code = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))[0], proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, code, timed_out = proc.communicate()[0], 124, True
        self.log.append(out.decode('utf-8', errors='replace'))
        if re.search(r'^::(set-output|set-env|add-path|save-state)\b', self.log[-1], re.M):
            raise Unsupported('the ::set-output, ::set-env, ::add-path and ::save-state workflow commands')
        if timed_out and deadline >= self.deadline:
            raise _TimedOut()
        if code:
            self.log.append('Error: the step ran past its timeout-minutes.\n' if timed_out else
                            f'Error: Process completed with exit code {code}.\n')
        return code

    def run_uses(self, step, frame, ctx, own, entry):
        uses, target = step['uses'], _resolve(step['uses'], self.actions)
        given = {str(k): _string(v, ctx) for k, v in (step.get('with') or {}).items()}
        if isinstance(target, str):
            return self.run_composite(target, uses, given, frame, ctx, own, entry)
        if not callable(target):
            raise WorkflowError(f'actions[{uses!r}] must be a callable or a folder')
        try:
            outputs = target(given, {'github': ctx['github'], 'runner': self.runner, 'secrets': self.secrets,
                                     'workspace': self.github['workspace'],
                                     'env': self.process_env(frame, ctx['env'], {})}) or {}
        except Unsupported:
            raise
        except Exception as e:  # an action that fails fails its step, as on GitHub
            self.log.append(f'Error: {uses}: {type(e).__name__}: {e}\n')
            return 1, {}
        return 0, {str(k): _text(v) for k, v in outputs.items()}

    def run_composite(self, path, uses, given, frame, ctx, own, entry):
        names = (os.path.join(path, 'action.yml'), os.path.join(path, 'action.yaml'))
        file = next((f for f in names if os.path.isfile(f)), '')
        if not file:
            raise WorkflowError(f'{uses}: no action.yml in {path}')
        action = _load(file)
        _only(action, _ACTION_KEYS, file)
        runs, declared = action.get('runs') or {}, action.get('inputs') or {}
        if runs.get('using') != 'composite':
            raise Unsupported(f'{uses}: runs.using {runs.get("using")!r} (only composite)')
        _only(runs, {'using', 'steps'}, f'{file}: runs')
        if unexpected := sorted(set(given) - set(declared)):
            self.log.append(f'Warning: {uses}: unexpected input(s) {", ".join(unexpected)}\n')
        dctx = {'github': dict(ctx['github'], action_path=path), 'runner': self.runner, 'env': ctx['env']}
        inputs = {}
        for name, decl in declared.items():
            if name not in given and (decl or {}).get('required') in (True, 'true') and 'default' not in decl:
                raise WorkflowError(f'{uses}: required input {name!r} not given')
            inputs[name] = given[name] if name in given else _string((decl or {}).get('default', ''), dctx)
        inner = _Frame(entry.setdefault('steps', []), inputs, frame.layers + [own], path)
        self.run_steps(runs.get('steps'), inner)
        octx, outputs = self.contexts(inner, ctx['env']), {}
        for name, decl in (action.get('outputs') or {}).items():
            if not isinstance(decl, dict) or 'value' not in decl:
                raise WorkflowError(f'{uses}: output {name!r} has no value:')
            outputs[name] = _string(decl['value'], octx)
        return (inner.exit_code or 1) if inner.status != 'success' else 0, outputs


def _resolve(uses, actions):
    """What the caller gave for a uses: value: actions[owner/repo[/path]] (the part before @), or the
    folder actions[owner/repo] joined with path; for ./path, actions['./path'] or actions['./'] + path."""
    if not isinstance(uses, str) or uses.startswith('docker://') or '${{' in uses:
        raise Unsupported(f'uses: {uses!r}')
    if uses.startswith('./') and uses not in actions:
        if isinstance(actions.get('./'), str):
            return os.path.join(actions['./'], uses[2:])
        raise Unsupported(f'uses: {uses} (a local action: give actions["./"])')
    name, at, ref = uses.partition('@')
    if not uses.startswith('./') and not (at and ref):
        raise WorkflowError(f'uses: {uses} has no @ref')
    repo, sub = '/'.join(name.split('/')[:2]), name.split('/')[2:]
    if name in actions:
        return actions[name]
    if sub and isinstance(actions.get(repo), str):
        return os.path.join(actions[repo], *sub)
    raise Unsupported(f'uses: {uses}: no action given for {name!r}')


def run_job(workflow_path, job_id, event_name, event_payload, *, workspace, runner_labels, env=None,
            actions=None, secrets=None, needs_results=None, timeout=1800):
    """Run jobs.<job_id> of the workflow for this event as the runner would; a JobResult. env: the
    environment the steps start from (default PATH HOME LANG TMPDIR USER from this one); actions: a
    uses: name (before @) -> callable(with, ctx) giving outputs, or a composite action's folder;
    needs_results: job -> {result, outputs}; timeout: seconds, beside timeout-minutes."""
    started, wf = time.monotonic(), _load(workflow_path)
    _only(wf, _WORKFLOW_KEYS, 'workflow')
    job = (wf.get('jobs') or {}).get(job_id)
    if job is None:
        raise WorkflowError(f'{workflow_path}: no job {job_id!r}')
    _only(job, _JOB_KEYS, f'jobs.{job_id}')
    result = JobResult(permissions=job.get('permissions', wf.get('permissions')))
    if reason := _event_filter(wf.get('on'), event_name, event_payload):
        return JobResult(reason=reason, permissions=result.permissions)
    needs = [job['needs']] if isinstance(job.get('needs'), str) else job.get('needs') or []
    if missing := [n for n in needs if n not in (needs_results or {})]:
        raise WorkflowError(f'jobs.{job_id} needs {", ".join(missing)}: pass needs_results')
    needs = {n: {'result': needs_results[n].get('result', 'success'), 'outputs': needs_results[n].get('outputs', {})}
             for n in needs}
    results = {v['result'] for v in needs.values()}
    status = 'success' if results <= {'success'} else 'failure' if 'failure' in results else 'other'
    for where, block in (('defaults', wf.get('defaults')), (f'jobs.{job_id}.defaults', job.get('defaults'))):
        _only(block or {}, {'run'}, where)
    defaults = {**((wf.get('defaults') or {}).get('run') or {}), **((job.get('defaults') or {}).get('run') or {})}
    _only(defaults, {'shell', 'working-directory'}, 'defaults.run')
    if defaults.get('shell', 'bash') != 'bash':
        raise Unsupported(f'defaults.run.shell {defaults["shell"]!r} (only bash)')
    temp = tempfile.mkdtemp(prefix='actions-runner-')
    try:
        with open(os.path.join(temp, 'event.json'), 'w', encoding='utf-8') as f:
            json.dump(event_payload, f)
        github = _github_context(event_name, event_payload, os.path.abspath(workspace), f.name,
                                 wf.get('name') or os.path.basename(workflow_path), job_id)
        jctx = {'github': github, 'needs': needs,
                'inputs': dict(event_payload.get('inputs') or {}) if event_name == 'workflow_dispatch' else {}}
        if not condition(job.get('if'), jctx, status):
            result.reason = 'if: false'
            return result
        if isinstance(job.get('runs-on'), dict):
            raise Unsupported('runs-on: as a mapping (group/labels)')
        labels = [job['runs-on']] if isinstance(job.get('runs-on'), str) else job.get('runs-on') or []
        labels = [_string(x, jctx) for x in labels]
        missing = [x for x in labels if x.lower() not in {str(y).lower() for y in runner_labels}]
        if not labels or missing:
            result.reason = f'runs-on: this runner has no label {", ".join(missing) or "(none asked for)"}'
            return result
        limit = min(timeout, 60 * float(interpolate(job.get('timeout-minutes', 360), jctx)))
        base_env = {k: os.environ[k] for k in ('PATH', 'HOME', 'LANG', 'TMPDIR', 'USER') if k in os.environ}
        run = _Job(result, github, needs, dict(base_env if env is None else env), actions or {},
                   {'GITHUB_TOKEN': TOKEN, **(secrets or {})}, temp, started + limit, defaults)
        return _finish(run, wf, job, jctx, limit)
    finally:
        shutil.rmtree(temp, ignore_errors=True)


def _finish(run, wf, job, jctx, limit):
    """Run the steps of a job that is to run, and fill in its result."""
    result = run.result
    result.ran = True
    run.frame = frame = _Frame(result.steps, jctx['inputs'])
    try:
        run.job_env = _env_block(wf.get('env'), dict(jctx, secrets=run.secrets))
        run.job_env.update(_env_block(job.get('env'), dict(jctx, secrets=run.secrets)))
        try:
            run.run_steps(job.get('steps'), frame)
        except _TimedOut:
            frame.status, frame.exit_code, frame.failed = 'failure', 124, f'(timed out after {limit:g} s)'
        octx = run.contexts(frame, {**run.job_env, **run.global_env})
        result.outputs = {str(k): _string(v, octx) for k, v in (job.get('outputs') or {}).items()}
    finally:
        for pgid in run.groups:  # what the steps left running, as the runner ends it after a job
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        result.log = ''.join(run.log)
    result.conclusion, result.exit_code = frame.status, frame.exit_code
    if frame.status == 'failure':
        result.reason = f'step {frame.failed} failed with exit code {frame.exit_code}'
    return result
