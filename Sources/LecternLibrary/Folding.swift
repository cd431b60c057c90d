import Foundation
import GRDB

/// Case folding for search, beyond ASCII: "émile" finds "ÉMILE", "straße" finds "STRASSE".
///
/// SQLite's `LIKE` folds ASCII letters only, so searches compare `lectern_fold(column)` with the folded
/// needle (`instr`, no wildcards to escape). The function is registered on every connection of the library
/// (``Library/configuration(readOnly:)``), so it needs no migration and works on read-only files too.
///
/// ```swift
/// Folding.fold("STRAẞE Émile")  // "strasse émile"
/// ```
enum Folding {
    /// Full case folding, approximated as lower-, upper- then lower-casing (ẞ → ß → SS → ss, ς → Σ → σ, ﬁ → FI → fi),
    /// in Unicode normalization form C so that composed and decomposed accents compare equal.
    static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text.lowercased() }
        return text.precomposedStringWithCanonicalMapping.lowercased().uppercased().lowercased().precomposedStringWithCanonicalMapping
    }

    /// `lectern_fold(text)`: the folded text; NULL stays NULL.
    static let function = DatabaseFunction("lectern_fold", argumentCount: 1, pure: true) { values in
        guard let text = String.fromDatabaseValue(values[0]) else { return nil }
        return fold(text)
    }
}
