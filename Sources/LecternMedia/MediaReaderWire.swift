import Foundation
import GStreamer

/// What the daemon and its media reader say to each other: messages of a 4-byte length (little-endian) and that
/// many bytes, made of integers (8 bytes, little-endian), strings and byte runs (a 4-byte length, then the bytes).
/// Hand-written rather than JSON: Foundation's JSON coders would add 0.8 MB of code to the daemon's resident
/// memory (measured: the lecternd file's Rss in /proc/PID/smaps, 11.2 MB against 10.4 MB).
enum MediaReaderWire {
    /// The most a message may hold: a cover of a few MB with room to spare; more is a broken peer.
    static let largestMessage = 64 << 20

    struct Request: Equatable {
        enum Kind: Int64 {
            /// Duration, tags, cover and chapters of one file.
            case read = 0
            /// The loudness of a book's files, as one programme.
            case loudness = 1
        }
        var kind: Kind
        /// The file to read, or the book's files to measure in order.
        var uris: [String]
        var timeoutMilliseconds: Int64

        init(uri: String, timeoutMilliseconds: Int64) {
            self.init(kind: .read, uris: [uri], timeoutMilliseconds: timeoutMilliseconds)
        }

        init(kind: Kind, uris: [String], timeoutMilliseconds: Int64) {
            self.kind = kind
            self.uris = uris
            self.timeoutMilliseconds = timeoutMilliseconds
        }
    }

    enum Reply: Equatable {
        case info(MediaInfo)
        case error(MediaError)
        case loudness(LoudnessMeasurement)
    }

    // MARK: Messages

    /// The first 8 bytes of every request: "LMR" and the protocol's version. A reader that finds another value
    /// exits (status 3) rather than guess.
    static let requestMagic: Int64 = 0x4C4D_5203

    static func speaksThisProtocol(_ payload: [UInt8]) -> Bool {
        var reader = Reader(payload)
        return reader.integer() == requestMagic
    }

    static func encode(_ request: Request) -> [UInt8] {
        var writer = Writer()
        writer.integer(requestMagic)
        writer.integer(request.kind.rawValue)
        writer.integer(request.timeoutMilliseconds)
        writer.integer(Int64(request.uris.count))
        request.uris.forEach { writer.string($0) }
        return writer.message
    }

    static func decodeRequest(_ payload: [UInt8]) -> Request? {
        var reader = Reader(payload)
        guard reader.integer() == requestMagic, let kind = reader.integer().flatMap(Request.Kind.init(rawValue:)),
              let timeout = reader.integer(), let count = reader.count() else { return nil }
        var uris: [String] = []
        for _ in 0..<count {
            guard let uri = reader.string() else { return nil }
            uris.append(uri)
        }
        guard reader.atEnd, kind == .loudness || uris.count == 1 else { return nil }
        return Request(kind: kind, uris: uris, timeoutMilliseconds: timeout)
    }

    static func encode(_ reply: Reply) -> [UInt8] {
        var writer = Writer()
        switch reply {
        case .info(let info):
            writer.integer(0)
            writer.duration(info.duration)
            writer.string(info.title)
            writer.integer(Int64(info.artists.count))
            info.artists.forEach { writer.string($0) }
            writer.string(info.album)
            writer.string(info.albumArtist)
            writer.string(info.genre)
            writer.integer(info.trackNumber.map(Int64.init) ?? -1)
            writer.integer(info.discNumber.map(Int64.init) ?? -1)
            writer.integer(info.hasAudio ? 1 : 0)
            writer.string(info.cover?.mimeType)
            if let cover = info.cover { writer.bytes(Array(cover.data)) }
            writer.integer(Int64(info.chapters.count))
            for chapter in info.chapters {
                writer.string(chapter.title)
                writer.duration(chapter.start)
                writer.duration(chapter.end)
            }
            switch info.lyrics {
            case nil: writer.integer(0)
            case .text(let text): writer.integer(1); writer.string(text)
            case .unreadable(let why): writer.integer(2); writer.string(why)
            }
            writer.string(info.series)
            writer.string(info.seriesPart)
        case .error(let error):
            switch error {
            case .notFound(let message): writer.integer(1); writer.string(message)
            case .unreadable(let message): writer.integer(2); writer.string(message)
            case .notAudio(let message): writer.integer(3); writer.string(message)
            case .failed(let message): writer.integer(4); writer.string(message)
            }
        case .loudness(let measured):
            writer.integer(5)
            writer.integer(Int64(bitPattern: (measured.integrated ?? -.infinity).bitPattern))
            writer.integer(Int64(bitPattern: measured.peak.bitPattern))
        }
        return writer.message
    }

    static func decodeReply(_ payload: [UInt8]) -> Reply? {
        var reader = Reader(payload)
        guard let kind = reader.integer() else { return nil }
        let reply: Reply
        switch kind {
        case 0:
            guard let duration = reader.duration(), let title = reader.optionalString(),
                  let artistCount = reader.count() else { return nil }
            var artists: [String] = []
            for _ in 0..<artistCount {
                guard let artist = reader.string() else { return nil }
                artists.append(artist)
            }
            guard let album = reader.optionalString(), let albumArtist = reader.optionalString(),
                  let genre = reader.optionalString(), let track = reader.integer(), let disc = reader.integer(),
                  let hasAudio = reader.integer(), let coverType = reader.optionalString() else { return nil }
            var cover: MediaInfo.CoverImage?
            if let coverType {
                guard let data = reader.bytes() else { return nil }
                cover = MediaInfo.CoverImage(data: Data(data), mimeType: coverType)
            }
            guard let chapterCount = reader.count() else { return nil }
            var chapters: [MediaInfo.Chapter] = []
            for _ in 0..<chapterCount {
                guard let title = reader.string(), let start = reader.duration(), let start, let end = reader.duration()
                else { return nil }
                chapters.append(MediaInfo.Chapter(title: title, start: start, end: end))
            }
            guard let lyricsKind = reader.integer() else { return nil }
            var lyrics: TagLyrics?
            if lyricsKind != 0 {
                guard let words = reader.string(), lyricsKind == 1 || lyricsKind == 2 else { return nil }
                lyrics = lyricsKind == 1 ? .text(words) : .unreadable(words)
            }
            guard let series = reader.optionalString(), let seriesPart = reader.optionalString() else { return nil }
            reply = .info(MediaInfo(duration: duration, title: title, artists: artists, album: album,
                                    albumArtist: albumArtist, genre: genre, trackNumber: track >= 0 ? Int(track) : nil,
                                    discNumber: disc >= 0 ? Int(disc) : nil, hasAudio: hasAudio != 0, cover: cover,
                                    chapters: chapters, lyrics: lyrics, series: series, seriesPart: seriesPart))
        case 1...4:
            guard let message = reader.string() else { return nil }
            let cases: [(String) -> MediaError] = [MediaError.notFound, MediaError.unreadable, MediaError.notAudio, MediaError.failed]
            reply = .error(cases[Int(kind) - 1](message))
        case 5:
            guard let integrated = reader.integer().map({ Double(bitPattern: UInt64(bitPattern: $0)) }),
                  let peak = reader.integer().map({ Double(bitPattern: UInt64(bitPattern: $0)) }), !integrated.isNaN,
                  peak.isFinite else { return nil }
            reply = .loudness(LoudnessMeasurement(integrated: integrated.isFinite ? integrated : nil, peak: peak))
        default:
            return nil
        }
        return reader.atEnd ? reply : nil
    }

    // MARK: Writing and reading the parts

    private struct Writer {
        private var data: [UInt8] = [0, 0, 0, 0]  // the length, set by `message`

        var message: [UInt8] {
            var message = data
            withUnsafeBytes(of: UInt32(data.count - 4).littleEndian) { message.replaceSubrange(0..<4, with: $0) }
            return message
        }

        mutating func integer(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) }
        }

        mutating func bytes(_ value: [UInt8]) {
            withUnsafeBytes(of: UInt32(value.count).littleEndian) { data.append(contentsOf: $0) }
            data.append(contentsOf: value)
        }

        /// nil is written as a length of 0xFFFFFFFF.
        mutating func string(_ value: String?) {
            guard let value else {
                data.append(contentsOf: [0xFF, 0xFF, 0xFF, 0xFF])
                return
            }
            bytes(Array(value.utf8))
        }

        /// In nanoseconds; nil is -1.
        mutating func duration(_ value: Duration?) {
            guard let value else { return integer(-1) }
            let (whole, overflow) = value.components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let (nanoseconds, overflowAgain) = whole.addingReportingOverflow(value.components.attoseconds / 1_000_000_000)
            integer(overflow || overflowAgain || nanoseconds < 0 ? -1 : nanoseconds)  // beyond 292 years: unknown
        }
    }

    private struct Reader {
        private let data: [UInt8]
        private var offset = 0

        init(_ bytes: [UInt8]) {
            self.data = bytes
        }

        var atEnd: Bool { offset == data.count }

        private mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
            guard count >= 0, data.count - offset >= count else { return nil }
            defer { offset += count }
            return data[offset..<offset + count]
        }

        mutating func integer() -> Int64? {
            take(8).map { slice in slice.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) } }
        }

        /// A count of items that follow: not negative, and not more than the bytes left could hold.
        mutating func count() -> Int? {
            integer().flatMap { $0 >= 0 && $0 <= data.count - offset ? Int($0) : nil }
        }

        private mutating func length() -> UInt32? {
            take(4).map { slice in slice.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        }

        mutating func bytes() -> [UInt8]? {
            length().flatMap { take(Int($0)) }.map(Array.init)
        }

        /// A string; nil when missing or not UTF-8.
        mutating func string() -> String? {
            optionalString() ?? nil
        }

        /// .some(nil) for a nil string; nil when malformed.
        mutating func optionalString() -> String?? {
            guard let length = length() else { return nil }
            if length == 0xFFFF_FFFF { return .some(nil) }
            guard let run = take(Int(length)), let text = String(validating: run, as: UTF8.self) else { return nil }
            return .some(text)
        }

        /// .some(nil) for -1; nil when malformed.
        mutating func duration() -> Duration?? {
            guard let nanoseconds = integer() else { return nil }
            if nanoseconds == -1 { return .some(nil) }
            return nanoseconds >= 0 ? .some(.nanoseconds(nanoseconds)) : nil
        }
    }
}
