/// The CSV lectern writes (bookmark exports, the history): as spreadsheets read it.
enum CSVText {
    /// A row: the fields, each quoted when it holds a comma, a quote or a line break.
    static func row(_ fields: [String]) -> String { fields.map(field).joined(separator: ",") }

    static func field(_ text: String) -> String {
        guard text.contains(where: { ",\"\n\r".contains($0) }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
