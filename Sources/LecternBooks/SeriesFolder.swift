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
    static func part(of name: String) -> String? {
        let pattern = /^(?i:(book|vol|volume|part|#)[ ._]*)?(\d{1,3}(?:\.\d+)?)([ ]*[-–—.:)_][ ]*|[ ]+)(\S.*)$/
        guard let match = name.wholeMatch(of: pattern) else { return nil }
        // A number followed by a space only is a title's ("3 Body Problem"), unless a word before it says it is a part.
        guard match.output.1 != nil || !match.output.3.allSatisfy({ $0 == " " }) else { return nil }
        return String(match.output.2)
    }
}
