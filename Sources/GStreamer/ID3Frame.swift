import Foundation

/// An ID3v2 frame as GStreamer hands on those it does not map (the "private-id3v2-frame" tag: the frame with its
/// 10-byte header, as in the file, and no version).
struct ID3Frame {
    /// "TXXX", "USLT", "MVNM"...
    let id: String
    /// What follows the header.
    let content: [UInt8]
    /// Compressed, encrypted, grouped or unsynchronised: those bits differ between ID3v2.3 and 2.4, so such a frame
    /// is not read.
    let hasFormatFlags: Bool

    /// nil when `bytes` is shorter than a frame's header.
    init?(_ bytes: [UInt8]) {
        guard bytes.count >= 10 else { return nil }
        id = String(decoding: bytes[0..<4], as: UTF8.self)
        content = Array(bytes[10...])
        hasFormatFlags = bytes[9] != 0
    }

    /// The first value of a text frame (`MVNM`, `MVIN`: an encoding, then values ended by NULs); nil when the frame
    /// has format flags or its text cannot be read.
    var text: String? {
        guard !hasFormatFlags, let encoding = content.first else { return nil }
        var at = 1
        return try? Self.string(content, at: &at, encoding)
    }

    /// A `TXXX` frame's description and first value (an encoding, the description ended by a NUL, the values); nil
    /// for another frame, or one that cannot be read.
    var userText: (description: String, value: String)? {
        guard id == "TXXX", !hasFormatFlags, let encoding = content.first else { return nil }
        var at = 1
        guard let description = try? Self.string(content, at: &at, encoding),
              let value = try? Self.string(content, at: &at, encoding) else { return nil }
        return (description, value)
    }

    struct Malformed: Error { var reason: String }

    /// The text at `at` in `encoding`, up to its NUL (two aligned in UTF-16) or the end; `at` moves past the NUL.
    /// ISO-8859-1 is read as such; UTF-16 with a byte order mark (each string its own), UTF-16BE, UTF-8.
    static func string(_ bytes: [UInt8], at: inout Int, _ encoding: UInt8) throws(Malformed) -> String {
        let wide = encoding == 1 || encoding == 2
        var end = at
        if wide {
            while end + 1 < bytes.count, bytes[end] != 0 || bytes[end + 1] != 0 { end += 2 }
        } else {
            while end < bytes.count, bytes[end] != 0 { end += 1 }
        }
        let run = Array(bytes[at..<min(end, bytes.count)])
        at = min(bytes.count, end + (wide ? 2 : 1))
        switch encoding {
        case 0:
            return String(decoding: run.map { UInt16($0) }, as: UTF16.self)
        case 3:
            guard let text = String(validating: run, as: UTF8.self) else { throw Malformed(reason: "not UTF-8") }
            return text
        case 1, 2:
            guard run.count % 2 == 0 else { throw Malformed(reason: "UTF-16 of an odd length") }
            var units = stride(from: 0, to: run.count, by: 2).map { UInt16(run[$0]) << 8 | UInt16(run[$0 + 1]) }
            if encoding == 1, let mark = units.first, mark == 0xFEFF || mark == 0xFFFE {
                if mark == 0xFFFE { units = units.map(\.byteSwapped) }
                units.removeFirst()
            }
            guard let text = String(validating: units, as: UTF16.self) else { throw Malformed(reason: "not UTF-16") }
            return text
        default:
            throw Malformed(reason: "an unknown text encoding (\(encoding))")
        }
    }
}
