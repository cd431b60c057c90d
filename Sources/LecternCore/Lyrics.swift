import Foundation

/// The words of one file (a song's lyrics, a chapter's transcript): its text and, when synced, its lines by time.
/// Read from LRC (`[mm:ss.xx]` before each line) or plain text; pure: the caller reads the bytes.
///
/// ```swift
/// let lyrics = try Lyrics(lrc: Array("[00:01.50]One\n[00:04.00]Two".utf8))
/// lyrics.lineIndex(at: .seconds(2))   // 0: "One" is heard from 1.5 s until 4 s
/// ```
public struct Lyrics: Sendable, Equatable {
    /// A synced line: heard from `start` (a position in the file) until the next line's start.
    public struct Line: Sendable, Equatable {
        public var start: Duration
        public var text: String
        public init(start: Duration, text: String) {
            self.start = start
            self.text = text
        }
    }

    /// The synced lines, by start (lines with the same start in file order); empty when the text has no times.
    public let lines: [Line]
    /// The whole text, a line per line: the synced lines in time order, else the text as written.
    public let text: String

    /// The most bytes an LRC file may have: a book's longest chapter as a transcript is a few hundred kB.
    public static let maximumSize = 1 << 20

    public var isSynced: Bool { !lines.isEmpty }

    /// Parses LRC (or plain text: lines without times). Several times before a line repeat it; `[offset:+ms]` moves
    /// every line earlier (a negative offset later); other tags (`[ar:…]`, `[ti:…]`) are left out; a byte-order mark
    /// and CRLF line ends are read; word times of enhanced LRC (`<mm:ss.xx>`) are left out of the text.
    ///
    /// - Throws: ``LyricsError``: more than ``maximumSize`` bytes, not UTF-8, control characters (not a text
    ///   file), or a time that is not one ("[00:75.00]"), or an offset that is not a number.
    public init(lrc bytes: some Collection<UInt8>) throws(LyricsError) {
        guard bytes.count <= Self.maximumSize else { throw .tooLarge(bytes.count) }
        var lineNumber = 1
        for byte in bytes {
            if byte == 0x0A {
                lineNumber += 1
            } else if byte < 0x20 && byte != 0x09 && byte != 0x0D || byte == 0x7F {
                throw .malformed(line: lineNumber, "a control character (\(String(format: "0x%02X", byte)))")
            }
        }
        guard var source = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        if source.hasPrefix("\u{FEFF}") { source.removeFirst() }
        var timed: [(line: Line, order: Int)] = []
        var untimed: [String] = []
        var offset = Duration.zero
        for (number, rawLine) in source.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = rawLine
            var rest = line.drop { $0 == " " || $0 == "\t" }
            var starts: [Duration] = []
            var isTagLine = false
            while rest.first == "[", let close = rest.firstIndex(of: "]") {
                let tag = rest[rest.index(after: rest.startIndex)..<close]
                if tag.first?.isASCII == true, tag.first?.isNumber == true, tag.contains(":") {
                    guard let start = Self.time(tag) else { throw .malformed(line: number + 1, "not a time: [\(tag)]") }
                    starts.append(start)
                    rest = rest[rest.index(after: close)...]
                    continue
                }
                if starts.isEmpty, let colon = tag.firstIndex(of: ":"), !tag[..<colon].isEmpty,
                   tag[..<colon].allSatisfy({ $0.isASCII && $0.isLetter }) {
                    isTagLine = true
                    if tag[..<colon].lowercased() == "offset" {
                        let value = tag[tag.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                        guard let milliseconds = Int(value.hasPrefix("+") ? String(value.dropFirst()) : value) else {
                            throw .malformed(line: number + 1, "not an offset in milliseconds: [\(tag)]")
                        }
                        offset = .milliseconds(milliseconds)
                    }
                }
                break
            }
            if isTagLine { continue }  // [ar:…], [ti:…], [offset:…]: not text
            let words = Self.withoutWordTimes(rest).trimmingCharacters(in: .whitespaces)
            if starts.isEmpty {
                untimed.append(words)
            } else {
                for start in starts { timed.append((Line(start: start, text: words), timed.count)) }
            }
        }
        if timed.isEmpty {
            while untimed.last?.isEmpty == true { untimed.removeLast() }
            while untimed.first?.isEmpty == true { untimed.removeFirst() }
            lines = []
            text = untimed.joined(separator: "\n")
        } else {
            lines = timed.sorted { ($0.line.start, $0.order) < ($1.line.start, $1.order) }.map { entry in
                Line(start: max(.zero, entry.line.start - offset), text: entry.line.text)
            }
            text = lines.map(\.text).joined(separator: "\n")
        }
    }

    /// The line heard at `position` (a position in the file): the last one starting at or before it; nil before
    /// the first line, or when not synced. A binary search: O(log n).
    public func lineIndex(at position: Duration) -> Int? {
        var low = 0, high = lines.count  // the first line starting after `position` is in low...high
        while low < high {
            let middle = (low + high) / 2
            if lines[middle].start <= position { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : low - 1
    }

    /// The text heard from `start` until `end` (positions in the file; nil: its end), as a chapter's text: of synced
    /// lines, the one heard at `start` and those starting before `end`, nil when none is heard then; unsynced text
    /// cannot be placed in time and is all of it. The whole text when that is all of it (the same string).
    public func text(from start: Duration, to end: Duration?) -> String? {
        guard isSynced else { return text.isEmpty ? nil : text }
        let first = lineIndex(at: start) ?? 0
        // The last line starting before `end`: the one heard just before it.
        let last: Int?
        if let end { last = end > .zero ? lineIndex(at: end - .nanoseconds(1)) : nil } else { last = lines.count - 1 }
        guard let last, last >= first else { return nil }
        if first == 0 && last == lines.count - 1 { return text }
        return lines[first...last].map(\.text).joined(separator: "\n")
    }

    /// `mm:ss`, `mm:ss.x` to `mm:ss.xxx`, or `mm:ss:xx` (a colon before hundredths, as some editors write it).
    static func time(_ tag: Substring) -> Duration? {
        let parts = tag.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        var secondsPart = parts[1]
        var fraction: Substring = ""
        if parts.count == 3 {
            fraction = parts[2]
        } else if let dot = secondsPart.firstIndex(of: ".") {
            fraction = secondsPart[secondsPart.index(after: dot)...]
            secondsPart = secondsPart[..<dot]
        }
        let digits = { (part: Substring) in part.allSatisfy { $0.isASCII && $0.isNumber } }
        guard (1...4).contains(parts[0].count), digits(parts[0]), secondsPart.count == 2, digits(secondsPart),
              fraction.count <= 3, digits(fraction), parts.count == 2 || !fraction.isEmpty,
              let minutes = Int(parts[0]), let seconds = Int(secondsPart), seconds < 60 else { return nil }
        let milliseconds = fraction.isEmpty ? 0 : Int(fraction.padding(toLength: 3, withPad: "0", startingAt: 0))!
        return .seconds(minutes * 60 + seconds) + .milliseconds(milliseconds)
    }

    /// The text without enhanced LRC's word times (`<00:01.20>`).
    private static func withoutWordTimes(_ text: Substring) -> String {
        guard text.contains("<") else { return String(text) }
        var result = ""
        var rest = text
        while let open = rest.firstIndex(of: "<") {
            result += rest[..<open]
            let after = rest[rest.index(after: open)...]
            if let close = after.firstIndex(of: ">"), time(after[..<close]) != nil {
                rest = after[after.index(after: close)...]
            } else {
                result.append("<")
                rest = after
            }
        }
        return result + rest
    }
}

/// Why lyrics could not be read; the caller logs it and shows no text.
public enum LyricsError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int)
    case notUTF8
    case malformed(line: Int, String)
    /// Not a regular file (a FIFO, a device, a folder), or it could not be read.
    case unreadable(String)

    public var description: String {
        switch self {
        case .tooLarge(let size): "\(size) bytes, more than the \(Lyrics.maximumSize) lyrics may have"
        case .notUTF8: "not UTF-8 text"
        case .malformed(let line, let what): "line \(line): \(what)"
        case .unreadable(let why): why
        }
    }
}
