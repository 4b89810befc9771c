//! Human output: aligned tables, content blocks as text, the progress bar; writing stdout.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use mcp_core::types::{Content, ProgressNotificationParams, ResourceContents};
use serde::Serialize;

use crate::errors::CliError;

/// A table with a header row; columns are padded to their widest cell, the last is not.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Row>,
}

#[derive(Debug)]
struct Row {
    cells: Vec<String>,
    /// Extra lines printed under the row, indented (e.g. a failure reason).
    notes: Vec<String>,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(Row {
            cells,
            notes: Vec::new(),
        });
    }

    /// Adds a line under the last row.
    pub fn note(&mut self, note: String) {
        if let Some(row) = self.rows.last_mut() {
            row.notes.push(note);
        }
    }

    /// Renders the table (ends with a newline).
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| width(h)).collect();
        for row in &self.rows {
            for (i, cell) in row.cells.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(width(cell));
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate().take(columns) {
                if i + 1 < columns {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(widths[i] - width(cell) + 2));
                } else {
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(&mut out, &self.header);
        for row in &self.rows {
            line(&mut out, &row.cells);
            for note in &row.notes {
                out.push_str("  ");
                out.push_str(note);
                out.push('\n');
            }
        }
        out
    }
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// The first non-empty line of `text`, cut to `max` characters (with `…`).
pub fn summary(text: Option<&str>, max: usize) -> String {
    let line = crate::errors::first_line(text.unwrap_or(""));
    if width(line) <= max {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// How many bytes a base64 string decodes to (ignoring whitespace).
fn base64_len(data: &str) -> usize {
    let chars = data.chars().filter(|c| !c.is_whitespace()).count();
    let padding = data
        .trim_end()
        .chars()
        .rev()
        .take_while(|&c| c == '=')
        .count();
    (chars / 4 * 3).saturating_sub(padding.min(2))
}

/// A content block as text: the text of text blocks, a one-line summary of the others.
pub fn render_content(content: &Content) -> String {
    match content {
        Content::Text { text, .. } => text.clone(),
        Content::Image {
            data, mime_type, ..
        } => format!("[image {mime_type}, {} bytes]", base64_len(data)),
        Content::Audio {
            data, mime_type, ..
        } => format!("[audio {mime_type}, {} bytes]", base64_len(data)),
        Content::ResourceLink { uri, extra } => match extra.get("name").and_then(|n| n.as_str()) {
            Some(name) => format!("[resource link {uri} ({name})]"),
            None => format!("[resource link {uri}]"),
        },
        Content::Resource(embedded) => match &embedded.resource.text {
            Some(text) => text.clone(),
            None => format!("[resource {}]", describe_contents(&embedded.resource)),
        },
        other => format!("[{} content]", other.type_name()),
    }
}

/// `uri (mime, N bytes)` for a binary resource.
fn describe_contents(contents: &ResourceContents) -> String {
    let mime = contents
        .mime_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    let size = contents.blob.as_deref().map(base64_len).unwrap_or(0);
    format!("{} ({mime}, {size} bytes)", contents.uri)
}

/// Content blocks, one after another, each ending with a newline.
pub fn render_contents(blocks: &[Content]) -> String {
    let mut out = String::new();
    for block in blocks {
        out.push_str(&render_content(block));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A resource's contents: text as is, binary summarized.
pub fn render_resource_contents(contents: &[ResourceContents]) -> String {
    let mut out = String::new();
    for c in contents {
        match &c.text {
            Some(text) => out.push_str(text),
            None => out.push_str(&format!("[binary {}]", describe_contents(c))),
        }
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Pretty JSON of anything serializable, with a final newline.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<String, CliError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::Other(format!("cannot write JSON: {e}")))?;
    text.push('\n');
    Ok(text)
}

/// Writes to stdout; a closed pipe (`mcph tools | head`) is not an error.
pub fn print(text: &str) -> Result<(), CliError> {
    print_or_closed(text).map(|_| ())
}

/// Like [`print()`], saying whether stdout is still open: `false` once the reader went away
/// (`mcph stats --json | head -1`), so a live command stops instead of working for nobody.
pub fn print_or_closed(text: &str) -> Result<bool, CliError> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(CliError::Other(format!("cannot write the output: {e}"))),
    }
}

/// A warning line on stderr.
pub fn warn(text: &str) {
    eprintln!("warning: {text}");
}

/// A line about what is happening, on stderr (stdout stays the result).
pub fn note(text: &str) {
    eprintln!("{text}");
}

/// A progress bar drawn on stderr, only when stderr is a terminal.
#[derive(Debug)]
pub struct Progress {
    enabled: bool,
    drawn: Mutex<bool>,
}

const BAR_WIDTH: usize = 30;

impl Progress {
    /// A bar that draws when stderr is a terminal.
    pub fn for_stderr() -> Self {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            drawn: Mutex::new(false),
        }
    }

    /// Draws one update.
    pub fn update(&self, p: &ProgressNotificationParams) {
        if !self.enabled {
            return;
        }
        let line = progress_line(p.progress, p.total, p.message.as_deref());
        let mut drawn = self.drawn.lock().unwrap_or_else(|e| e.into_inner());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
        *drawn = true;
    }

    /// Erases the bar, if one was drawn.
    pub fn clear(&self) {
        let mut drawn = self.drawn.lock().unwrap_or_else(|e| e.into_inner());
        if *drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            *drawn = false;
        }
    }
}

/// `[#########.....................]  30% message` with a total, `… 3 message` without.
pub fn progress_line(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let mut line = match total {
        Some(total) if total > 0.0 => {
            let fraction = (progress / total).clamp(0.0, 1.0);
            let filled = (fraction * BAR_WIDTH as f64).round() as usize;
            format!(
                "[{}{}] {:>3}%",
                "#".repeat(filled),
                ".".repeat(BAR_WIDTH - filled),
                (fraction * 100.0).round() as u32
            )
        }
        _ => format!("working… {progress}"),
    };
    if let Some(message) = message
        .map(crate::errors::first_line)
        .filter(|m| !m.is_empty())
    {
        line.push(' ');
        line.push_str(&summary(Some(message), 60));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table_pads_all_but_the_last_column() {
        let mut t = Table::new(&["NAME", "STATUS", "SERVER"]);
        t.row(vec!["a".into(), "ready".into(), "x 1.0".into()]);
        t.row(vec!["broken".into(), "failed".into(), "-".into()]);
        t.note("reason: exited with status 3".into());
        assert_eq!(
            t.render(),
            "NAME    STATUS  SERVER\n\
             a       ready   x 1.0\n\
             broken  failed  -\n  \
             reason: exited with status 3\n"
        );
    }

    #[test]
    fn summaries_take_the_first_line_and_cut() {
        assert_eq!(summary(Some("\nfirst\nsecond"), 80), "first");
        assert_eq!(summary(Some("abcdef"), 4), "abc…");
        assert_eq!(summary(None, 4), "");
    }

    #[test]
    fn non_text_content_is_summarized() {
        let image: Content = serde_json::from_value(
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        )
        .unwrap();
        assert_eq!(render_content(&image), "[image image/png, 3 bytes]");
        let link: Content = serde_json::from_value(
            json!({"type": "resource_link", "uri": "file:///a", "name": "a"}),
        )
        .unwrap();
        assert_eq!(render_content(&link), "[resource link file:///a (a)]");
        let blob: Content = serde_json::from_value(json!({
            "type": "resource",
            "resource": {"uri": "x://b", "mimeType": "application/pdf", "blob": "AAE="}
        }))
        .unwrap();
        assert_eq!(
            render_content(&blob),
            "[resource x://b (application/pdf, 2 bytes)]"
        );
        let text = Content::text("hi");
        assert_eq!(render_contents(&[text.clone(), text]), "hi\nhi\n");
    }

    #[test]
    fn progress_lines() {
        assert_eq!(
            progress_line(1.0, Some(2.0), Some("step 1")),
            format!("[{}{}]  50% step 1", "#".repeat(15), ".".repeat(15))
        );
        assert_eq!(progress_line(3.0, None, None), "working… 3");
        assert!(progress_line(5.0, Some(2.0), None).ends_with("100%"));
    }

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("AA=="), 1);
        assert_eq!(base64_len("AAA="), 2);
        assert_eq!(base64_len("AAAA"), 3);
    }
}
