//! Column-aligned text output, as Kafka's command-line tools print their tables.

/// Rows under a header, printed with each column as wide as its widest cell.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (one cell per column).
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.header.len());
        self.rows.push(cells);
    }

    /// The table as text, columns separated by two spaces, no trailing blanks.
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.header.iter().map(String::len).collect();
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in std::iter::once(&self.header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (c, w)) in r.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(c);
                line.extend(std::iter::repeat_n(' ', w - c.chars().count()));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// Prints [`render`](Self::render) to stdout.
    pub fn print(&self) {
        print!("{}", self.render());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let mut t = super::Table::new(&["TOPIC", "P"]);
        t.row(vec!["orders".into(), "10".into()]);
        assert_eq!(t.render(), "TOPIC   P\norders  10\n");
    }
}
