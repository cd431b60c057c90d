import Foundation

/// The series tags of an MP4/M4B file's iTunes metadata (the items of `moov/udta/meta/ilst`), read from its atoms:
/// GStreamer 1.22 drops the freeform items and hands the movement items on unread.
///
/// ```swift
/// let tags = try MP4SeriesTags.read(of: URL(fileURLWithPath: "/books/mistborn-2.m4b"))
/// print(tags.movementName ?? "", tags.movementNumber ?? 0)   // Mistborn 2
/// ```
/// Only atom headers and the items named here are read: never the cover art or the audio. Each call opens and closes
/// its own file handle.
public struct MP4SeriesTags: Sendable, Equatable {
    /// A freeform item (`----`) of mean `com.apple.iTunes` named `SERIES` (in any case).
    public var series: String?
    /// A freeform item named `SERIES-PART` or `SERIESPART`.
    public var seriesPart: String?
    /// `©mvn`.
    public var movementName: String?
    /// `©mvi`.
    public var movementNumber: Int?

    public init(series: String? = nil, seriesPart: String? = nil, movementName: String? = nil, movementNumber: Int? = nil) {
        self.series = series
        self.seriesPart = seriesPart
        self.movementName = movementName
        self.movementNumber = movementNumber
    }

    /// The tags of the file at `url`, as written (not trimmed); nil fields when the file has no such item, or an item
    /// is damaged.
    /// - Throws: ``MP4Error``, as ``MP4ChapterReader/chapters(of:)`` does.
    public static func read(of url: URL) throws(MP4Error) -> MP4SeriesTags {
        try read(FileSource(url), name: url.path(percentEncoded: false))
    }

    /// ``read(of:)`` for a file already in memory.
    public static func read(in data: Data) throws(MP4Error) -> MP4SeriesTags {
        try read(DataSource(data: data), name: "data")
    }

    /// An item larger than this is not one of these (a cover is): skipped unread.
    static let largestItem = 64 * 1024

    static func read(_ source: some ByteSource, name: String) throws(MP4Error) -> MP4SeriesTags {
        let movie = try AtomWalker.movie(source, name: name)
        var tags = MP4SeriesTags()
        guard let meta = try AtomWalker.descendant(source, of: movie, path: [.udta, .meta]) else { return tags }
        // ISO's `meta` has a version and flags before its children; QuickTime's starts with its first child (`hdlr`).
        let head = try meta.payload(source, limit: 8)
        let quickTime = head.count == 8 && head[4..<8].elementsEqual("hdlr".utf8)
        var list: Atom?
        try AtomWalker.walk(source, from: meta.payloadOffset + (quickTime ? 0 : 4), to: meta.end) { atom in
            if atom.type == .ilst { list = atom }
            return list == nil
        }
        guard let list else { return tags }
        try AtomWalker.walk(source, from: list.payloadOffset, to: list.end) { item throws(MP4Error) in
            guard [.movementName, .movementNumber, .freeform].contains(item.type), item.payloadSize <= largestItem
            else { return true }
            let parts = try MP4ChapterReader.ignoringDamage { () throws(MP4Error) in try Item(item, source) }
            guard let parts, let data = parts.data else { return true }
            switch item.type {
            case .movementName:
                tags.movementName = tags.movementName ?? data.text
            case .movementNumber:
                tags.movementNumber = tags.movementNumber ?? data.integer
            default:
                guard parts.mean == "com.apple.iTunes", let key = parts.name?.uppercased() else { break }
                if key == "SERIES" {
                    tags.series = tags.series ?? data.text
                } else if key == "SERIES-PART" || key == "SERIESPART" {
                    tags.seriesPart = tags.seriesPart ?? data.text
                }
            }
            return true
        }
        return tags
    }
}

/// An `ilst` item's parts: its first `data` atom, and a freeform item's `mean` and `name`.
private struct Item {
    var data: Value?
    var mean: String?
    var name: String?

    init(_ item: Atom, _ source: some ByteSource) throws(MP4Error) {
        let bytes = DataSource(data: Data(try item.payload(source, limit: MP4SeriesTags.largestItem)))
        var data: Value?, mean: String?, name: String?
        try AtomWalker.walk(bytes, from: 0, to: bytes.size) { child throws(MP4Error) in
            var reader = ByteReader(try child.payload(bytes, limit: Int(child.payloadSize)), what: "\(child.type)")
            switch child.type {
            case .data where data == nil:
                let type = try reader.u32() & 0xFF_FFFF  // a version byte, then the type
                try reader.skip(4)  // the locale
                data = Value(type: type, bytes: Array(try reader.bytes(reader.remaining)))
            case .mean, .name:
                try reader.skip(4)  // version and flags
                let text = String(decoding: try reader.bytes(reader.remaining), as: UTF8.self)
                if child.type == .mean { mean = text } else { name = text }
            default:
                break
            }
            return true
        }
        self.data = data
        self.mean = mean
        self.name = name
    }

    /// A `data` atom's value and its type (iTunes' "well-known types").
    struct Value {
        var type: UInt32
        var bytes: [UInt8]

        /// Type 1 (UTF-8) or 2 (UTF-16, big-endian); nil for another type.
        var text: String? {
            switch type {
            case 1:
                return String(decoding: bytes, as: UTF8.self)
            case 2:
                let units = stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
                return String(decoding: units, as: UTF16.self)
            default:
                return nil
            }
        }

        /// A big-endian integer of 1 to 8 bytes: type 21 (signed), 22 (unsigned) or 0 (implicit, as some taggers
        /// write `©mvi`); nil otherwise.
        var integer: Int? {
            guard [0, 21, 22].contains(type), (1...8).contains(bytes.count) else { return nil }
            let unsigned = bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard type == 21 else { return Int(exactly: unsigned) }
            let shift = UInt64(64 - 8 * bytes.count)
            return Int(Int64(bitPattern: unsigned << shift) >> shift)  // sign-extended
        }
    }
}
