//! A command line as a POSIX shell (and bash) reads it, down to the simple commands it would
//! run: operators (`&&`, `||`, `;`, `|`, `&`, newlines), subshells and groups, quoting
//! (single, double, `$'…'`, backslashes), command substitutions (`$(…)`, backticks) run as
//! commands of their own, redirections, here-documents, comments, assignments, and the compound
//! commands' reserved words (`if`, `for`, `while`, `case`, functions). No expansion is made: a
//! word whose value the shell decides when it runs is marked `dynamic`.
//!
//! The guard reads what an agent is about to run with it, so it errs toward seeing a command:
//! a function's body counts as run, and a line it cannot read (an unclosed quote) is an error
//! the caller decides on.

/// A word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    /// Holds an expansion (`$x`, `${x}`, `$(…)`, backticks, `$((…))`): its value is the
    /// shell's to decide.
    pub dynamic: bool,
}

impl Word {
    pub fn is(&self, text: &str) -> bool {
        !self.dynamic && self.text == text
    }
}

/// A directory change made earlier in the same shell (`cd <dir> && …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dir {
    To(String),
    /// `cd -`, `cd` alone, `popd`, or a directory the shell decides.
    Unknown,
}

/// One simple command as the shell would run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Simple {
    /// The command's words, assignments and redirections left out.
    pub words: Vec<Word>,
    /// The assignments before it (`GIT_DIR=x git …`), as `NAME=value`.
    pub assignments: Vec<Word>,
    /// The directory changes before it in its shell, in order.
    pub dirs: Vec<Dir>,
}

/// Why a line could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    Unclosed(&'static str),
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParseError::Unclosed(what) => write!(f, "an unclosed {what}"),
        }
    }
}

/// The simple commands `line` runs, in order, command substitutions after the command whose
/// words hold them.
pub fn commands(line: &str) -> Result<Vec<Simple>, ParseError> {
    let tokens = lex(line)?;
    let mut parser = Parser::default();
    parser.scopes.push(Vec::new());
    parser.run(&tokens)?;
    Ok(parser.out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word {
        word: Word,
        /// The command lines of the substitutions in it.
        subs: Vec<String>,
        /// Written as `NAME=…`, unquoted up to the `=`.
        assignment: bool,
    },
    Op(&'static str),
    /// A word of digits right before a redirection (`2>`).
    IoNumber,
}

const OPERATORS: [&str; 21] = [
    ";;&", "&>>", "<<-", "&&", "||", ";;", ";&", "|&", "<<", ">>", "<&", ">&", "<>", ">|", "&>",
    ";", "&", "|", "(", ")", "<",
];

fn is_redirect(op: &str) -> bool {
    matches!(
        op,
        "<" | ">" | ">>" | "<&" | ">&" | "<>" | ">|" | "&>" | "&>>" | "<<" | "<<-"
    )
}

fn lex(line: &str) -> Result<Vec<Token>, ParseError> {
    let chars: Vec<char> = line.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    // Here-documents whose body starts at the next line: (delimiter, strip tabs).
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => i += 1,
            '\\' if chars.get(i + 1) == Some(&'\n') => i += 2,
            '\n' => {
                tokens.push(Token::Op("\n"));
                i += 1;
                for (delimiter, strip) in std::mem::take(&mut heredocs) {
                    i = skip_heredoc(&chars, i, &delimiter, strip);
                }
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            _ => {
                if let Some(op) = operator_at(&chars, i) {
                    i += op.chars().count();
                    if op == "<<" || op == "<<-" {
                        // The next word is the delimiter; the body follows the line.
                        while matches!(chars.get(i), Some(' ' | '\t')) {
                            i += 1;
                        }
                        let (word, _, _, next) = read_word(&chars, i)?;
                        heredocs.push((word.text, op == "<<-"));
                        tokens.push(Token::Op(op));
                        tokens.push(Token::Word {
                            word: Word {
                                text: String::new(),
                                dynamic: false,
                            },
                            subs: Vec::new(),
                            assignment: false,
                        });
                        i = next;
                        continue;
                    }
                    tokens.push(Token::Op(op));
                    continue;
                }
                let (word, subs, assignment, next) = read_word(&chars, i)?;
                let io_number = !word.dynamic
                    && !word.text.is_empty()
                    && word.text.bytes().all(|b| b.is_ascii_digit())
                    && next == i + word.text.len()
                    && matches!(chars.get(next), Some('<' | '>'));
                tokens.push(if io_number {
                    Token::IoNumber
                } else {
                    Token::Word {
                        word,
                        subs,
                        assignment,
                    }
                });
                i = next;
            }
        }
    }
    Ok(tokens)
}

/// Past a here-document's body that starts at `i`: the line that is its delimiter included.
fn skip_heredoc(chars: &[char], mut i: usize, delimiter: &str, strip: bool) -> usize {
    while i < chars.len() {
        let end = chars[i..]
            .iter()
            .position(|&c| c == '\n')
            .map_or(chars.len(), |p| i + p);
        let line: String = chars[i..end].iter().collect();
        let line = if strip {
            line.trim_start_matches('\t')
        } else {
            &line
        };
        i = (end + 1).min(chars.len());
        if line == delimiter {
            break;
        }
    }
    i
}

fn operator_at(chars: &[char], i: usize) -> Option<&'static str> {
    OPERATORS.into_iter().chain([">"]).find(|op| {
        op.chars()
            .enumerate()
            .all(|(k, c)| chars.get(i + k) == Some(&c))
    })
}

fn ends_word(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

/// One word from `i`: its text after quote removal, the substitutions in it, whether it is an
/// assignment, and where it ends.
fn read_word(chars: &[char], mut i: usize) -> Result<(Word, Vec<String>, bool, usize), ParseError> {
    let mut text = String::new();
    let mut dynamic = false;
    let mut subs = Vec::new();
    let mut assignment = false;
    let mut quoted = false;
    while i < chars.len() && !ends_word(chars[i]) {
        let c = chars[i];
        match c {
            '\\' => {
                if let Some(&n) = chars.get(i + 1) {
                    if n != '\n' {
                        text.push(n);
                    }
                    i += 2;
                } else {
                    i += 1;
                }
                quoted = true;
            }
            '\'' => {
                let end = find(chars, i + 1, '\'').ok_or(ParseError::Unclosed("single quote"))?;
                text.extend(&chars[i + 1..end]);
                i = end + 1;
                quoted = true;
            }
            '"' => {
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(ParseError::Unclosed("double quote")),
                        Some('"') => break,
                        Some('\\') => {
                            match chars.get(i + 1) {
                                Some(&n @ ('"' | '\\' | '$' | '`')) => text.push(n),
                                Some('\n') => {}
                                Some(&n) => {
                                    text.push('\\');
                                    text.push(n);
                                }
                                None => return Err(ParseError::Unclosed("double quote")),
                            }
                            i += 2;
                        }
                        Some('$') | Some('`') => {
                            let (next, sub) = expansion(chars, i)?;
                            dynamic |= next > i + 1 || sub.is_some();
                            if next == i + 1 {
                                text.push('$');
                            }
                            subs.extend(sub);
                            i = next;
                        }
                        Some(&n) => {
                            text.push(n);
                            i += 1;
                        }
                    }
                }
                i += 1;
                quoted = true;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                // ANSI-C quoting: escapes kept as written, enough to see a word.
                let mut k = i + 2;
                loop {
                    match chars.get(k) {
                        None => return Err(ParseError::Unclosed("$'…' quote")),
                        Some('\\') => {
                            if let Some(&n) = chars.get(k + 1) {
                                text.push(match n {
                                    'n' => '\n',
                                    't' => '\t',
                                    other => other,
                                });
                            }
                            k += 2;
                        }
                        Some('\'') => break,
                        Some(&n) => {
                            text.push(n);
                            k += 1;
                        }
                    }
                }
                i = k + 1;
                quoted = true;
            }
            '$' | '`' => {
                let (next, sub) = expansion(chars, i)?;
                if next == i + 1 {
                    text.push('$');
                } else {
                    dynamic = true;
                }
                subs.extend(sub);
                i = next;
            }
            '=' if !quoted && !assignment && !dynamic && is_name(&text) => {
                assignment = true;
                text.push('=');
                i += 1;
            }
            _ => {
                text.push(c);
                i += 1;
            }
        }
    }
    Ok((Word { text, dynamic }, subs, assignment, i))
}

fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|f| f == b'_' || f.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}

fn find(chars: &[char], from: usize, c: char) -> Option<usize> {
    chars[from..].iter().position(|&x| x == c).map(|p| from + p)
}

/// An expansion at `i` (`$…` or a backtick): where it ends, and the command line of a command
/// substitution. A `$` that starts none is one character.
fn expansion(chars: &[char], i: usize) -> Result<(usize, Option<String>), ParseError> {
    if chars[i] == '`' {
        let mut k = i + 1;
        let mut inner = String::new();
        loop {
            match chars.get(k) {
                None => return Err(ParseError::Unclosed("backtick")),
                Some('`') => break,
                Some('\\') if matches!(chars.get(k + 1), Some('`' | '\\' | '$')) => {
                    inner.push(chars[k + 1]);
                    k += 2;
                }
                Some(&c) => {
                    inner.push(c);
                    k += 1;
                }
            }
        }
        return Ok((k + 1, Some(inner)));
    }
    match chars.get(i + 1) {
        Some('(') if chars.get(i + 2) == Some(&'(') => {
            let end = balanced(chars, i + 1, '(', ')').ok_or(ParseError::Unclosed("$((…))"))?;
            Ok((end + 1, None))
        }
        Some('(') => {
            let end = balanced(chars, i + 1, '(', ')').ok_or(ParseError::Unclosed("$(…)"))?;
            Ok((end + 1, Some(chars[i + 2..end].iter().collect())))
        }
        Some('{') => {
            let end = balanced(chars, i + 1, '{', '}').ok_or(ParseError::Unclosed("${…}"))?;
            Ok((end + 1, None))
        }
        Some(c) if c.is_ascii_alphanumeric() || "_@*#?$!-".contains(*c) => {
            let mut k = i + 1;
            if c.is_ascii_alphabetic() || *c == '_' {
                while chars
                    .get(k)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    k += 1;
                }
            } else {
                k += 1;
            }
            Ok((k, None))
        }
        _ => Ok((i + 1, None)),
    }
}

/// The index of the `close` that balances the `open` at `i`, quotes and here-documents inside
/// skipped (`$(cat <<'EOF' … EOF)`, the way Claude Code writes a commit message: an apostrophe
/// in its text is no quote).
fn balanced(chars: &[char], i: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    let mut k = i;
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    while k < chars.len() {
        match chars[k] {
            '<' if chars.get(k + 1) == Some(&'<') && chars.get(k + 2) != Some(&'<') => {
                k += 2;
                let strip = chars.get(k) == Some(&'-');
                if strip {
                    k += 1;
                }
                while matches!(chars.get(k), Some(' ' | '\t')) {
                    k += 1;
                }
                let (word, _, _, next) = read_word(chars, k).ok()?;
                heredocs.push((word.text, strip));
                k = next;
                continue;
            }
            '\n' if !heredocs.is_empty() => {
                k += 1;
                for (delimiter, strip) in std::mem::take(&mut heredocs) {
                    k = skip_heredoc(chars, k, &delimiter, strip);
                }
                continue;
            }
            '\\' => k += 1,
            '\'' => k = find(chars, k + 1, '\'')?,
            '"' => {
                k += 1;
                while k < chars.len() && chars[k] != '"' {
                    if chars[k] == '\\' {
                        k += 1;
                    }
                    k += 1;
                }
            }
            c if c == open => depth += 1,
            c if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
        k += 1;
    }
    None
}

/// Where the parser is in a compound command's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Mode {
    #[default]
    Command,
    /// After `for NAME` / `select NAME`: the `in` list, up to `;` or a newline.
    ForList,
    /// After `case`: the word, up to `in`.
    CaseWord,
    /// In a `case`: a pattern, up to its `)`.
    CasePattern,
    /// Inside `[[ … ]]`: a test, up to `]]`.
    Test,
}

#[derive(Default)]
struct Parser {
    out: Vec<Simple>,
    words: Vec<Word>,
    assignments: Vec<Word>,
    subs: Vec<String>,
    /// The directory changes of each open shell, innermost last.
    scopes: Vec<Vec<Dir>>,
    mode: Mode,
    /// Open `case` commands, for `esac` and `;;` to return to patterns.
    cases: usize,
    /// The next word is a redirection's target.
    redirect: bool,
    /// The next word names a function or a loop variable: not a command.
    skip_next: bool,
    /// The `)` of a function's `name()` is next.
    skip_close: bool,
}

impl Parser {
    fn run(&mut self, tokens: &[Token]) -> Result<(), ParseError> {
        for token in tokens {
            match token {
                Token::IoNumber => {}
                Token::Word {
                    word,
                    subs,
                    assignment,
                } => self.word(word, subs, *assignment)?,
                Token::Op(op) => self.op(op)?,
            }
        }
        self.end()?;
        Ok(())
    }

    fn word(&mut self, word: &Word, subs: &[String], assignment: bool) -> Result<(), ParseError> {
        self.subs.extend(subs.iter().cloned());
        if std::mem::take(&mut self.redirect) {
            return Ok(());
        }
        if std::mem::take(&mut self.skip_next) {
            return Ok(());
        }
        match self.mode {
            Mode::ForList => {
                if self.words.is_empty() && word.is("do") {
                    self.mode = Mode::Command;
                }
                return Ok(());
            }
            Mode::CaseWord => {
                if word.is("in") {
                    self.mode = Mode::CasePattern;
                }
                return Ok(());
            }
            Mode::CasePattern => {
                if word.is("esac") {
                    self.cases = self.cases.saturating_sub(1);
                    self.mode = Mode::Command;
                }
                return Ok(());
            }
            Mode::Test => {
                if word.is("]]") {
                    self.mode = Mode::Command;
                }
                return Ok(());
            }
            Mode::Command => {}
        }
        if self.words.is_empty() {
            if assignment {
                self.assignments.push(word.clone());
                return Ok(());
            }
            let reserved = if word.dynamic { "" } else { word.text.as_str() };
            match reserved {
                "if" | "then" | "else" | "elif" | "do" | "while" | "until" | "!" | "{" | "time" => {
                    return Ok(());
                }
                "fi" | "done" | "}" => return self.end(),
                "esac" => {
                    self.end()?;
                    self.cases = self.cases.saturating_sub(1);
                    return Ok(());
                }
                "for" | "select" => {
                    self.skip_next = true;
                    self.mode = Mode::ForList;
                    return Ok(());
                }
                "case" => {
                    self.cases += 1;
                    self.mode = Mode::CaseWord;
                    return Ok(());
                }
                "function" => {
                    self.skip_next = true;
                    return Ok(());
                }
                "[[" => {
                    self.mode = Mode::Test;
                    return Ok(());
                }
                _ => {}
            }
        }
        self.words.push(word.clone());
        Ok(())
    }

    fn op(&mut self, op: &'static str) -> Result<(), ParseError> {
        if is_redirect(op) {
            self.redirect = true;
            return Ok(());
        }
        match self.mode {
            Mode::ForList if matches!(op, ";" | "\n") => {
                // The list ends; `do` follows.
                return Ok(());
            }
            Mode::CasePattern => {
                if op == ")" {
                    self.mode = Mode::Command;
                }
                return Ok(());
            }
            Mode::CaseWord | Mode::Test | Mode::ForList => return Ok(()),
            Mode::Command => {}
        }
        match op {
            "(" => {
                if self.words.is_empty() {
                    // A subshell: its directory changes stay in it.
                    let inherited = self.scopes.last().cloned().unwrap_or_default();
                    self.scopes.push(inherited);
                } else {
                    // `name()`: a function's definition; its body follows.
                    self.words.clear();
                    self.skip_close = true;
                }
            }
            ")" => {
                if std::mem::take(&mut self.skip_close) {
                    return Ok(());
                }
                self.end()?;
                if self.scopes.len() > 1 {
                    self.scopes.pop();
                }
            }
            ";;" | ";&" | ";;&" => {
                self.end()?;
                if self.cases > 0 {
                    self.mode = Mode::CasePattern;
                }
            }
            _ => self.end()?,
        }
        Ok(())
    }

    /// Ends the simple command being read: kept when it has words, a `cd` remembered in its
    /// shell, and its command substitutions read as commands of their own.
    fn end(&mut self) -> Result<(), ParseError> {
        let words = std::mem::take(&mut self.words);
        let assignments = std::mem::take(&mut self.assignments);
        let subs = std::mem::take(&mut self.subs);
        let dirs = self.scopes.last().cloned().unwrap_or_default();
        for sub in subs {
            for mut inner in commands(&sub)? {
                let mut all = dirs.clone();
                all.append(&mut inner.dirs);
                inner.dirs = all;
                self.out.push(inner);
            }
        }
        if words.is_empty() {
            return Ok(());
        }
        let change = match words.first().map(|w| (w.dynamic, w.text.as_str())) {
            Some((false, "cd" | "pushd")) => Some(match words.get(1) {
                Some(w) if !w.dynamic && w.text != "-" && !w.text.starts_with('-') => {
                    Dir::To(w.text.clone())
                }
                _ => Dir::Unknown,
            }),
            Some((false, "popd")) => Some(Dir::Unknown),
            _ => None,
        };
        self.out.push(Simple {
            words,
            assignments,
            dirs,
        });
        if let (Some(change), Some(scope)) = (change, self.scopes.last_mut()) {
            scope.push(change);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each command as `[dirs] words`, a dynamic word in `{}`.
    fn shown(line: &str) -> Vec<String> {
        commands(line)
            .unwrap()
            .into_iter()
            .map(|c| {
                let dirs: Vec<String> = c
                    .dirs
                    .iter()
                    .map(|d| match d {
                        Dir::To(p) => format!("cd {p}"),
                        Dir::Unknown => "cd ?".into(),
                    })
                    .collect();
                let words: Vec<String> = c
                    .assignments
                    .iter()
                    .chain(&c.words)
                    .map(|w| {
                        if w.dynamic {
                            format!("{{{}}}", w.text)
                        } else {
                            w.text.clone()
                        }
                    })
                    .collect();
                if dirs.is_empty() {
                    words.join(" ")
                } else {
                    format!("[{}] {}", dirs.join(", "), words.join(" "))
                }
            })
            .collect()
    }

    #[test]
    fn lists_pipelines_and_operators_split_commands() {
        assert_eq!(
            shown("git add -A && git commit -m 'a b' || echo no; git log | head -1 & wait"),
            [
                "git add -A",
                "git commit -m a b",
                "echo no",
                "git log",
                "head -1",
                "wait"
            ]
        );
        assert_eq!(shown("a\nb\n\nc"), ["a", "b", "c"]);
        assert_eq!(shown("a|&b;c&&d"), ["a", "b", "c", "d"]);
        assert_eq!(shown(""), Vec::<String>::new());
        assert_eq!(shown("  # only a comment"), Vec::<String>::new());
        assert_eq!(
            shown("echo a#b # comment\ngit stash"),
            ["echo a#b", "git stash"]
        );
    }

    #[test]
    fn a_line_of_quoted_arguments_reads_back_as_them() {
        let args = [
            "plans/x",
            "it's",
            "a b",
            "",
            "$HOME",
            "\"q\"",
            "back\\slash",
            "a;b",
        ];
        let line: Vec<String> = args.iter().map(|a| crate::text::shell_quote(a)).collect();
        let cmds = commands(&line.join(" ")).unwrap();
        let words: Vec<&str> = cmds[0].words.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(words, args);
        assert!(cmds[0].words.iter().all(|w| !w.dynamic));
    }

    #[test]
    fn quoting_is_removed_and_expansions_marked() {
        assert_eq!(
            shown(r#"git "sta"sh 'po'p \-q "$HOME/x" ${A} $'a\tb' "\$x" '$y'"#),
            [r#"git stash pop -q {/x} {} a	b $x $y"#]
        );
        assert_eq!(shown("echo a\\\nb"), ["echo ab"]);
        assert_eq!(shown("echo $ 5$"), ["echo $ 5$"]);
        assert_eq!(
            commands("echo 'open"),
            Err(ParseError::Unclosed("single quote"))
        );
        assert_eq!(
            commands("echo \"open"),
            Err(ParseError::Unclosed("double quote"))
        );
        assert_eq!(commands("echo $(git"), Err(ParseError::Unclosed("$(…)")));
        assert_eq!(commands("echo `git"), Err(ParseError::Unclosed("backtick")));
    }

    /// The commit Claude Code writes: its message a here-document inside a substitution, an
    /// apostrophe and parentheses in the text.
    #[test]
    fn a_heredoc_inside_a_substitution_is_its_text() {
        let line = "git commit -m \"$(cat <<'EOF'\nFix the thing\n\nIt's done (finally).\nEOF\n)\" && git stash";
        assert_eq!(shown(line), ["cat", "git commit -m {}", "git stash"]);
        let line = "x=$(cat <<-END\n\tit's ) here\n\tEND\n); git reset --hard";
        assert_eq!(shown(line), ["cat", "git reset --hard"]);
    }

    #[test]
    fn substitutions_run_as_commands_of_their_own() {
        assert_eq!(
            shown("echo $(git stash list | wc -l) \"`git reset --hard`\" $((1 + 2))"),
            [
                "git stash list",
                "wc -l",
                "git reset --hard",
                "echo {} {} {}"
            ]
        );
        // A substitution's directory change stays in it.
        assert_eq!(
            shown("x=$(cd sub && git stash) git log"),
            ["cd sub", "[cd sub] git stash", "{x=} git log"]
        );
    }

    #[test]
    fn assignments_redirections_and_heredocs_are_not_words() {
        assert_eq!(
            shown("GIT_DIR=/x A=1 git status >out 2>&1 </dev/null &>>log"),
            ["GIT_DIR=/x A=1 git status"]
        );
        assert_eq!(
            shown("cat <<EOF >f\ngit reset --hard\nEOF\ngit stash"),
            ["cat", "git stash"]
        );
        assert_eq!(
            shown("cat <<-'END'\n\tgit reset --hard\n\tEND\necho after"),
            ["cat", "echo after"]
        );
        // An `=` in an argument is no assignment.
        assert_eq!(shown("env A=1 git x=y"), ["env A=1 git x=y"]);
        assert_eq!(shown("'A'=1 cmd"), ["A=1 cmd"]);
    }

    #[test]
    fn directory_changes_follow_their_shell() {
        assert_eq!(
            shown("cd /r && git stash; (cd sub; git reset --hard); git status"),
            [
                "cd /r",
                "[cd /r] git stash",
                "[cd /r] cd sub",
                "[cd /r, cd sub] git reset --hard",
                "[cd /r] git status"
            ]
        );
        assert_eq!(
            shown("{ cd a; git stash; }; git log"),
            ["cd a", "[cd a] git stash", "[cd a] git log"]
        );
        assert_eq!(
            shown("cd \"$R\" && git stash; cd - ; popd; git x"),
            [
                "cd {}",
                "[cd ?] git stash",
                "[cd ?] cd -",
                "[cd ?, cd ?] popd",
                "[cd ?, cd ?, cd ?] git x"
            ]
        );
    }

    #[test]
    fn compound_commands_run_their_bodies() {
        assert_eq!(
            shown("if git diff --quiet; then git stash; else git reset --hard; fi"),
            ["git diff --quiet", "git stash", "git reset --hard"]
        );
        assert_eq!(
            shown("for f in a b $(ls); do git checkout -- \"$f\"; done"),
            ["ls", "git checkout -- {}"]
        );
        assert_eq!(
            shown("while read l; do git branch -D $l; done < list"),
            ["read l", "git branch -D {}"]
        );
        assert_eq!(
            shown("case $x in a|b) git stash;; (c) git clean -fd;; esac; echo"),
            ["git stash", "git clean -fd", "echo"]
        );
        assert_eq!(
            shown("f() { git stash pop; }; function g { git reset --hard; }; f"),
            ["git stash pop", "git reset --hard", "f"]
        );
        assert_eq!(shown("[[ -n $x && -d y ]] && git stash"), ["git stash"]);
        assert_eq!(
            shown("! git diff --quiet || time git stash"),
            ["git diff --quiet", "git stash"]
        );
    }
}
