//! Variable expansion in string values.
//!
//! - Claude Desktop / Claude Code / Cursor / Codex: `${VAR}` and `${VAR:-default}` (the default is
//!   used when `VAR` is unset or empty). An unset `VAR` without a default is an error; a lone `$`
//!   or `$NAME` without braces is left as is; an unterminated `${` is an error.
//! - VS Code: `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${env:VAR}`,
//!   `${pathSeparator}` / `${/}`. `${input:...}` needs an interactive prompt and is an error, as
//!   is any other variable.
//!
//! Variables are read through a lookup closure so tests never touch the process environment.
//! Error messages name variables, never values.

use std::path::PathBuf;

/// Reads an environment variable (`std::env::var` in production, a map in tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Why a value could not be expanded (turned into a [`super::ConfigError`] by the caller, who
/// knows the file, server and field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with `NAME` unset and no default.
    Unset { name: String, vscode: bool },
    /// `${` without a closing `}`.
    Unterminated,
    /// `${}` or `${1abc}`: not a variable name.
    InvalidName,
    /// VS Code `${input:...}`.
    VsCodeInput,
    /// A VS Code variable this loader does not resolve.
    VsCodeUnsupported { name: String },
    /// `${userHome}` with neither `HOME` nor `USERPROFILE` set.
    NoHome,
}

impl ExpandError {
    pub(crate) fn message(&self) -> String {
        match self {
            ExpandError::Unset { name, vscode: false } => format!(
                "environment variable {name} is not set (write ${{{name}:-default}} to give a default)"
            ),
            ExpandError::Unset { name, vscode: true } => {
                format!("environment variable {name} is not set (referenced as ${{env:{name}}})")
            }
            ExpandError::Unterminated => {
                "unterminated `${` (expected `${NAME}` or `${NAME:-default}` with a closing `}`)"
                    .to_owned()
            }
            ExpandError::InvalidName => "expected a variable name (letters, digits and `_`, not \
                 starting with a digit) inside `${...}`"
                .to_owned(),
            ExpandError::VsCodeInput => "VS Code input variables need an interactive prompt; set \
                 the value directly or use ${env:VAR}"
                .to_owned(),
            ExpandError::VsCodeUnsupported { name } => {
                let hint = if is_var_name(name) {
                    format!(" (for an environment variable write ${{env:{name}}})")
                } else {
                    String::new()
                };
                format!(
                    "the VS Code variable ${{{name}}} is not supported here{hint}; supported: \
                     ${{workspaceFolder}}, ${{workspaceFolderBasename}}, ${{userHome}}, \
                     ${{env:VAR}}, ${{pathSeparator}}"
                )
            }
            ExpandError::NoHome => {
                "${userHome} needs HOME (or USERPROFILE) to be set, and neither is".to_owned()
            }
        }
    }
}

/// Expands `${VAR}` / `${VAR:-default}` (Claude, Cursor, Codex syntax).
pub(crate) fn expand_shell(input: &str, env: EnvLookup<'_>) -> Result<String, ExpandError> {
    expand_with(input, |inner| {
        let (name, default) = match inner.find(":-") {
            Some(i) => (&inner[..i], Some(&inner[i + 2..])),
            None => (inner, None),
        };
        if !is_var_name(name) {
            return Err(ExpandError::InvalidName);
        }
        match (env(name), default) {
            (Some(value), Some(default)) if value.is_empty() => Ok(default.to_owned()),
            (Some(value), _) => Ok(value),
            (None, Some(default)) => Ok(default.to_owned()),
            (None, None) => Err(ExpandError::Unset {
                name: name.to_owned(),
                vscode: false,
            }),
        }
    })
}

/// What VS Code's predefined variables resolve to.
#[derive(Debug, Clone)]
pub(crate) struct VsCodeVars {
    /// The parent of the `.vscode` folder holding the file, else the file's folder.
    pub workspace_folder: PathBuf,
}

/// Expands VS Code's `${workspaceFolder}`, `${userHome}`, `${env:VAR}`, ….
pub(crate) fn expand_vscode(
    input: &str,
    vars: &VsCodeVars,
    env: EnvLookup<'_>,
) -> Result<String, ExpandError> {
    expand_with(input, |inner| match inner {
        "workspaceFolder" => Ok(vars.workspace_folder.to_string_lossy().into_owned()),
        "workspaceFolderBasename" => Ok(vars
            .workspace_folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()),
        "userHome" => env("HOME")
            .filter(|h| !h.is_empty())
            .or_else(|| env("USERPROFILE").filter(|h| !h.is_empty()))
            .ok_or(ExpandError::NoHome),
        "pathSeparator" | "/" => Ok(std::path::MAIN_SEPARATOR.to_string()),
        _ => {
            if let Some(name) = inner.strip_prefix("env:") {
                if !is_var_name(name) {
                    return Err(ExpandError::InvalidName);
                }
                env(name).ok_or_else(|| ExpandError::Unset {
                    name: name.to_owned(),
                    vscode: true,
                })
            } else if inner.starts_with("input:") {
                Err(ExpandError::VsCodeInput)
            } else {
                Err(ExpandError::VsCodeUnsupported {
                    name: inner.to_owned(),
                })
            }
        }
    })
}

/// Replaces every `${...}` in `input` by `resolve(inner)`; everything else is copied.
fn expand_with(
    input: &str,
    mut resolve: impl FnMut(&str) -> Result<String, ExpandError>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unterminated)?;
        out.push_str(&resolve(&after[..end])?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    fn shell(input: &str, pairs: &[(&str, &str)]) -> Result<String, ExpandError> {
        let env = env_of(pairs);
        expand_shell(input, &env)
    }

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(
            shell("no variables here", &[]).unwrap(),
            "no variables here"
        );
        assert_eq!(shell("", &[]).unwrap(), "");
    }

    #[test]
    fn set_variables_are_substituted() {
        let pairs = [("A", "1"), ("B_2", "two")];
        assert_eq!(shell("${A}", &pairs).unwrap(), "1");
        assert_eq!(shell("x${A}y${B_2}z", &pairs).unwrap(), "x1ytwoz");
        assert_eq!(shell("${A}${A}", &pairs).unwrap(), "11");
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(shell("${A:-dflt}", &[]).unwrap(), "dflt");
        assert_eq!(shell("${A:-dflt}", &[("A", "")]).unwrap(), "dflt");
        assert_eq!(shell("${A:-dflt}", &[("A", "set")]).unwrap(), "set");
        assert_eq!(shell("${A:-}", &[]).unwrap(), "");
        assert_eq!(
            shell("${URL:-http://localhost:8080/x}", &[]).unwrap(),
            "http://localhost:8080/x"
        );
        // The default is literal text: no nested expansion.
        assert_eq!(shell("${A:-$B}", &[("B", "b")]).unwrap(), "$B");
    }

    #[test]
    fn set_but_empty_without_default_is_empty() {
        assert_eq!(shell("a${A}b", &[("A", "")]).unwrap(), "ab");
    }

    #[test]
    fn unset_without_default_is_an_error_naming_the_variable() {
        let err = shell("Bearer ${GITHUB_TOKEN}", &[]).unwrap_err();
        assert_eq!(
            err,
            ExpandError::Unset {
                name: "GITHUB_TOKEN".into(),
                vscode: false
            }
        );
        assert_eq!(
            err.message(),
            "environment variable GITHUB_TOKEN is not set (write ${GITHUB_TOKEN:-default} to give a default)"
        );
    }

    #[test]
    fn dollar_without_braces_is_left_alone() {
        let pairs = [("HOME", "/h")];
        assert_eq!(shell("$HOME/x", &pairs).unwrap(), "$HOME/x");
        assert_eq!(shell("cost: 5$", &pairs).unwrap(), "cost: 5$");
        assert_eq!(shell("$", &pairs).unwrap(), "$");
        assert_eq!(shell("$$", &pairs).unwrap(), "$$");
        assert_eq!(shell("a$ {HOME}", &pairs).unwrap(), "a$ {HOME}");
        assert_eq!(shell("$${HOME}", &pairs).unwrap(), "$/h");
        assert_eq!(shell("{HOME}", &pairs).unwrap(), "{HOME}");
    }

    #[test]
    fn unterminated_is_an_error() {
        assert_eq!(shell("${HOME", &[]).unwrap_err(), ExpandError::Unterminated);
        assert_eq!(shell("abc ${", &[]).unwrap_err(), ExpandError::Unterminated);
        assert_eq!(
            shell("${A} ${B", &[("A", "1")]).unwrap_err(),
            ExpandError::Unterminated
        );
    }

    #[test]
    fn bad_names_are_errors() {
        for input in ["${}", "${1A}", "${A-B}", "${ A}", "${:-x}", "${A B}"] {
            assert_eq!(
                shell(input, &[]).unwrap_err(),
                ExpandError::InvalidName,
                "{input}"
            );
        }
    }

    #[test]
    fn unicode_around_variables_is_kept() {
        assert_eq!(shell("é${A}ü", &[("A", "ß")]).unwrap(), "éßü");
    }

    #[test]
    fn the_value_is_not_re_expanded() {
        assert_eq!(shell("${A}", &[("A", "${B}")]).unwrap(), "${B}");
    }

    fn vscode(input: &str, pairs: &[(&str, &str)]) -> Result<String, ExpandError> {
        let env = env_of(pairs);
        let vars = VsCodeVars {
            workspace_folder: PathBuf::from("/ws/proj"),
        };
        expand_vscode(input, &vars, &env)
    }

    #[test]
    fn vscode_variables() {
        let pairs = [("HOME", "/home/u"), ("TOKEN", "t")];
        assert_eq!(
            vscode("${workspaceFolder}/src", &pairs).unwrap(),
            "/ws/proj/src"
        );
        assert_eq!(
            vscode("${workspaceFolderBasename}", &pairs).unwrap(),
            "proj"
        );
        assert_eq!(vscode("${userHome}/.x", &pairs).unwrap(), "/home/u/.x");
        assert_eq!(vscode("Bearer ${env:TOKEN}", &pairs).unwrap(), "Bearer t");
        assert_eq!(
            vscode("${userHome}", &[("USERPROFILE", "C:\\u")]).unwrap(),
            "C:\\u"
        );
        assert_eq!(vscode("${userHome}", &[]).unwrap_err(), ExpandError::NoHome);
    }

    #[test]
    fn vscode_errors() {
        assert_eq!(
            vscode("${input:token}", &[]).unwrap_err(),
            ExpandError::VsCodeInput
        );
        assert!(ExpandError::VsCodeInput
            .message()
            .contains("VS Code input variables need an interactive prompt"));
        assert_eq!(
            vscode("${env:NOPE}", &[]).unwrap_err(),
            ExpandError::Unset {
                name: "NOPE".into(),
                vscode: true
            }
        );
        let err = vscode("${TOKEN}", &[]).unwrap_err();
        assert!(err.message().contains("${env:TOKEN}"), "{}", err.message());
        assert!(matches!(
            vscode("${config:editor.fontSize}", &[]).unwrap_err(),
            ExpandError::VsCodeUnsupported { .. }
        ));
        assert_eq!(
            vscode("${workspaceFolder", &[]).unwrap_err(),
            ExpandError::Unterminated
        );
    }
}
