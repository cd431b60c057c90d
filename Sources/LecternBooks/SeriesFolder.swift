import Foundation

/// A book's series read from where its folder is, for books whose tags name none: the common layout
/// "…/Series/01 - Title" (or "Book 2 - Title", "1. Title", "2.5 - Title") makes the folder above the book's its series,
/// and the number its part.
///
/// A number alone before the title ("3 Body Problem") is no part: it needs a separator (`-`, `–`, `.`, `:`, `)`, `_`)
/// or a word before it (Book, Vol, Volume, Part, #). The folder an import starts from is no series (a library folder
/// with numbered books in it), nor is the root.
///
/// ```swift
/// SeriesFolder.series(of: "/books/Discworld/01 - The Colour of Magic", below: "/books")  // ("Discworld", "01")
/// ```
enum SeriesFolder {
    /// The series and part of the book whose files are in `folder`, from an import of `root`; nil when its folder's
    /// name has no part, or the folder above it is `root` or the file system's root.
    static func series(of folder: String, below root: String) -> (name: String, part: String?)? {
        let url = URL(fileURLWithPath: folder).standardizedFileURL
        let above = url.deletingLastPathComponent().standardizedFileURL
        guard above.path != "/", above.path != URL(fileURLWithPath: root).standardizedFileURL.path,
              let part = part(of: url.lastPathComponent) else { return nil }
        return (above.lastPathComponent, part)
    }

    /// The part a book folder's name begins with ("01 - Title": "01"), as written; nil when it begins with none.
    ///
    /// The name is read as `^(?i:(book|vol|volume|part|#)[ ._]*)?(\d{1,3}(?:\.\d+)?)([ ]*[-–—.:)_][ ]*|[ ]+)(\S.*)$` would
    /// read it (the test checks the two agree), by hand: a regular expression here brings Swift's regex parser and
    /// compiler into the daemon (0.8 MB of resident code).
    static func part(of name: String) -> String? {
        // Most names begin with neither a digit nor a word for a part: no need to read them further.
        guard let first = name.first, isDigit(first) || ["b", "v", "p", "#"].contains(first.lowercased()) else { return nil }
        let name = Array(name)
        // A word before the number says it is a part, whatever follows it.
        for word in ["book", "vol", "volume", "part", "#"] {
            guard var at = end(of: word, atTheStartOf: name) else { continue }
            while at < name.count, " ._".contains(name[at]) { at += 1 }
            if let (part, _) = numberAndTitle(name, from: at) { return part }
        }
        // A number followed by a space only is a title's ("3 Body Problem").
        guard let (part, spaceOnly) = numberAndTitle(name, from: 0), !spaceOnly else { return nil }
        return part
    }

    /// Where `word` ends when `name` begins with it, in any case.
    private static func end(of word: String, atTheStartOf name: [Character]) -> Int? {
        let word = Array(word)
        guard name.count >= word.count,
              zip(name, word).allSatisfy({ $0.lowercased() == String($1) }) else { return nil }
        return word.count
    }

    /// The number (one to three digits, then a fraction if any) at `start`, and whether only spaces separate it from
    /// the title after it; nil when no number and title follow. A fraction is taken first, as the pattern does.
    private static func numberAndTitle(_ name: [Character], from start: Int) -> (part: String, spaceOnly: Bool)? {
        var at = start
        while at < name.count, isDigit(name[at]) { at += 1 }
        // A fourth digit is no separator: nothing else matches.
        guard (1...3).contains(at - start) else { return nil }
        if at + 1 < name.count, name[at] == ".", isDigit(name[at + 1]) {
            var end = at + 1
            while end < name.count, isDigit(name[end]) { end += 1 }
            if let spaceOnly = separatorAndTitle(name, from: end) { return (String(name[start..<end]), spaceOnly) }
        }
        guard let spaceOnly = separatorAndTitle(name, from: at) else { return nil }
        return (String(name[start..<at]), spaceOnly)
    }

    /// After a number: a separator with spaces around it, or spaces alone, then a title (true: spaces alone); nil when
    /// neither is there.
    private static func separatorAndTitle(_ name: [Character], from start: Int) -> Bool? {
        var at = start
        while at < name.count, name[at] == " " { at += 1 }
        if at < name.count, "-–—.:)_".contains(name[at]) {
            var title = at + 1
            while title < name.count, name[title] == " " { title += 1 }
            if isTitle(name, from: title) { return false }
        }
        return at > start && isTitle(name, from: at) ? true : nil
    }

    /// A title: something that is not a space first, and no line break.
    private static func isTitle(_ name: [Character], from start: Int) -> Bool {
        start < name.count && !name[start].isWhitespace && !name[start...].contains(where: \.isNewline)
    }

    private static func isDigit(_ character: Character) -> Bool {
        character.unicodeScalars.count == 1 && character.unicodeScalars.first!.properties.generalCategory == .decimalNumber
    }
}
