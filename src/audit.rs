//! The deletion-protection audit log: one JSON line per refusal in `<dir>/protection.log`
//! (spec/deletion-protection.md §7).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

/// Appends audit lines; disabled when no directory was configured.
#[derive(Debug, Default)]
pub struct AuditLog {
    file: Option<Mutex<File>>,
}

impl AuditLog {
    /// Opens (creating) `<dir>/protection.log`.
    ///
    /// # Errors
    /// When the directory or file cannot be created: the server refuses to start, as OpenKruise does.
    pub fn open(dir: &Path) -> std::io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("protection.log"))?;
        Ok(Self {
            file: Some(Mutex::new(file)),
        })
    }

    /// Writes one line; an I/O error is logged, never fatal to the admission.
    pub fn write(&self, line: &str) {
        let Some(file) = &self.file else { return };
        let mut f = file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = writeln!(f, "{line}") {
            tracing::warn!(error = %e, "writing the protection audit log");
        }
    }
}
