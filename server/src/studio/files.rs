//! The studio's folder: the CSV and Parquet files a steward may register as sources or
//! hierarchies. Only a file listed here can be named; nothing outside the folder is
//! reachable (no paths, no links leading out of it).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The most files listed.
const MAX_FILES: usize = 1000;

/// The folder the configuration allows (`studio_files`).
#[derive(Debug, Clone)]
pub struct Folder {
    root: PathBuf,
}

/// A file of the folder.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    /// Its name in the folder.
    pub name: String,
    /// Its full path.
    pub path: PathBuf,
    pub bytes: u64,
    /// For a CSV file: its delimiter (from its first line) and whether that line looks like
    /// a header; `None` for Parquet.
    pub csv: Option<(char, bool)>,
}

impl Folder {
    /// The folder at `root` (which must exist).
    pub fn new(root: &Path) -> Result<Self, String> {
        let root = root
            .canonicalize()
            .map_err(|e| format!("studio_files {}: {e}", root.display()))?;
        if !root.is_dir() {
            return Err(format!("studio_files {}: not a folder", root.display()));
        }
        Ok(Self { root })
    }

    /// The CSV and Parquet files directly in the folder, by name.
    pub fn files(&self) -> Vec<DataFile> {
        let Ok(entries) = std::fs::read_dir(&self.root) else {
            return Vec::new();
        };
        let mut files: Vec<DataFile> = entries
            .filter_map(|entry| entry.ok())
            .filter_map(|entry| self.file(&entry.file_name().to_string_lossy()))
            .take(MAX_FILES)
            .collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        files
    }

    /// The file `name` of the folder, if it is one (a plain name, a regular file whose real
    /// path is inside the folder, ending in .csv, .tsv or .parquet).
    pub fn file(&self, name: &str) -> Option<DataFile> {
        if name.is_empty() || name.contains(['/', '\\', '\0']) || name.starts_with('.') {
            return None;
        }
        let lower = name.to_ascii_lowercase();
        let csv = lower.ends_with(".csv") || lower.ends_with(".tsv");
        if !csv && !lower.ends_with(".parquet") {
            return None;
        }
        let path = self.root.join(name).canonicalize().ok()?;
        if path.parent() != Some(self.root.as_path()) {
            return None;
        }
        let meta = std::fs::metadata(&path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let csv = if csv { Some(sniff(&path)) } else { None };
        Some(DataFile {
            name: name.to_string(),
            path,
            bytes: meta.len(),
            csv,
        })
    }

    /// The full path and CSV settings of file `name`, for SQL.
    pub fn locate(&self, name: &str) -> Option<(String, Option<(char, bool)>)> {
        self.file(name)
            .map(|f| (f.path.to_string_lossy().into_owned(), f.csv))
    }
}

/// The delimiter and header of a CSV file, from its first line.
fn sniff(path: &Path) -> (char, bool) {
    let mut line = String::new();
    if let Ok(file) = std::fs::File::open(path) {
        let _ = BufReader::new(file).take(64 * 1024).read_line(&mut line);
    }
    sniff_line(&line)
}

/// The delimiter of a CSV text's first line (the most frequent of `;`, `,`, tab and `|`)
/// and whether that line is a header (none of its fields is a number).
pub fn sniff_line(line: &str) -> (char, bool) {
    let delimiter = [';', ',', '\t', '|']
        .into_iter()
        .max_by_key(|d| line.matches(*d).count())
        .unwrap_or(',');
    let header = line
        .trim_end()
        .split(delimiter)
        .all(|field| field.trim().trim_matches('"').parse::<f64>().is_err());
    (delimiter, header)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_folders_own_data_files_are_found() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("adult.csv"), "sex;age\nMale;39\n").expect("write");
        std::fs::write(dir.path().join("h.csv"), "1,0-4,*\n").expect("write");
        std::fs::write(dir.path().join("notes.txt"), "x").expect("write");
        std::fs::create_dir(dir.path().join("sub.csv")).expect("mkdir");
        let outside = tempfile::tempdir().expect("temp dir");
        std::fs::write(outside.path().join("secret.csv"), "a\n1\n").expect("write");
        #[cfg(unix)]
        std::os::unix::fs::symlink(
            outside.path().join("secret.csv"),
            dir.path().join("link.csv"),
        )
        .expect("symlink");
        let folder = Folder::new(dir.path()).expect("folder");
        let names: Vec<String> = folder.files().into_iter().map(|f| f.name).collect();
        assert_eq!(names, ["adult.csv", "h.csv"]);
        assert_eq!(
            folder.file("adult.csv").and_then(|f| f.csv),
            Some((';', true))
        );
        assert_eq!(folder.file("h.csv").and_then(|f| f.csv), Some((',', false)));
        for name in [
            "../adult.csv",
            "/etc/passwd",
            "link.csv",
            "sub.csv",
            "notes.txt",
            ".x.csv",
            "",
        ] {
            assert!(folder.file(name).is_none(), "{name}");
        }
    }
}
