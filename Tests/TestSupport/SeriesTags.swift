import Foundation

/// Files whose tags name a book's series as taggers write them (``AudioFiles/TagWords``, with mutagen), and the series
/// and part a reader should find in each.
///
/// ```swift
/// let file = try SeriesTags.file(SeriesTags.named("ID3 TXXX"), in: folder.url)
/// ```
public enum SeriesTags {
    public struct Case: Sendable {
        public let name: String
        /// The file's extension: "mp3", "ogg", "opus", "flac" or "m4b".
        public let format: String
        public let tags: [AudioFiles.TagWords]
        public let series: String?
        public let part: String?
    }

    private static let freeform = "----:com.apple.iTunes:"

    public static let cases: [Case] = [
        Case(name: "ID3 TXXX", format: "mp3", tags: [.id3UserText("SERIES", "Discworld"), .id3UserText("SERIES-PART", "2.5")],
             series: "Discworld", part: "2.5"),
        Case(name: "ID3v2.3 TXXX", format: "mp3",
             tags: [.id3UserText("SERIES", "Brontë’s Ways", id3v2_3: true), .id3UserText("SERIES-PART", "0", id3v2_3: true)],
             series: "Brontë’s Ways", part: "0"),
        Case(name: "ID3 movement", format: "mp3", tags: [.id3Text("MVNM", "Mistborn"), .id3Text("MVIN", "2/5")],
             series: "Mistborn", part: "2"),
        Case(name: "ID3 TXXX wins over the movement", format: "mp3",
             tags: [.id3Text("MVNM", "Mistborn"), .id3Text("MVIN", "2/5"), .id3UserText("series", "Discworld"),
                    .id3UserText("SERIESPART", "3")],
             series: "Discworld", part: "3"),
        Case(name: "ID3 empty TXXX gives way to the movement", format: "mp3",
             tags: [.id3UserText("SERIES", "  "), .id3UserText("SERIES-PART", ""), .id3Text("MVNM", "Mistborn"), .id3Text("MVIN", "4")],
             series: "Mistborn", part: "4"),
        Case(name: "ID3 values trimmed", format: "mp3",
             tags: [.id3UserText("SERIES", " The Expanse "), .id3UserText("SERIES-PART", " 1-3 ")], series: "The Expanse", part: "1-3"),
        Case(name: "ID3 none", format: "mp3", tags: [], series: nil, part: nil),
        Case(name: "Vorbis", format: "ogg", tags: [.vorbisComment("SERIES", "Discworld"), .vorbisComment("SERIES-PART", "2.5")],
             series: "Discworld", part: "2.5"),
        Case(name: "Vorbis movement", format: "ogg", tags: [.vorbisComment("MOVEMENTNAME", "Mistborn"), .vorbisComment("MOVEMENT", "2")],
             series: "Mistborn", part: "2"),
        Case(name: "Vorbis none", format: "ogg", tags: [], series: nil, part: nil),
        Case(name: "Opus, keys in lower case", format: "opus",
             tags: [.vorbisComment("series", "Discworld"), .vorbisComment("seriespart", "0")], series: "Discworld", part: "0"),
        Case(name: "Opus none", format: "opus", tags: [], series: nil, part: nil),
        Case(name: "FLAC, SERIES wins over the movement", format: "flac",
             tags: [.vorbisComment("MOVEMENTNAME", "Mistborn"), .vorbisComment("MOVEMENT", "2"),
                    .vorbisComment("SERIES", "Discworld"), .vorbisComment("SERIESPART", "12")],
             series: "Discworld", part: "12"),
        Case(name: "FLAC none", format: "flac", tags: [], series: nil, part: nil),
        Case(name: "MP4 freeform", format: "m4b",
             tags: [.mp4Text(freeform + "SERIES", "Discworld"), .mp4Text(freeform + "SERIES-PART", "2.5")],
             series: "Discworld", part: "2.5"),
        Case(name: "MP4 movement", format: "m4b", tags: [.mp4Text("\u{A9}mvn", "Mistborn"), .mp4Number("\u{A9}mvi", 2)],
             series: "Mistborn", part: "2"),
        Case(name: "MP4 freeform wins over the movement", format: "m4b",
             tags: [.mp4Text("\u{A9}mvn", "Mistborn"), .mp4Number("\u{A9}mvi", 2), .mp4Text(freeform + "series", "Discworld"),
                    .mp4Text(freeform + "SERIESPART", "0")],
             series: "Discworld", part: "0"),
        Case(name: "MP4 none", format: "m4b", tags: [], series: nil, part: nil),
    ]

    public static func named(_ name: String) -> Case {
        cases.first { $0.name == name }!
    }

    /// The names of the cases of `formats`.
    public static func names(_ formats: Set<String>) -> [String] {
        cases.filter { formats.contains($0.format) }.map(\.name)
    }

    /// The case's file, made in `folder`: a second of sound titled "A Book" (MP3, M4B), then its tags.
    public static func file(_ tagged: Case, in folder: URL) throws -> URL {
        let url = folder.appendingPathComponent("book.\(tagged.format)")
        switch tagged.format {
        case "mp3": try AudioFiles.mp3(url, seconds: 1, tags: .init(title: "A Book"))
        case "m4b": try AudioFiles.m4b(url, seconds: 1, tags: .init(title: "A Book"))
        case "ogg": try AudioFiles.ogg(url, seconds: 1)
        case "opus": try AudioFiles.opus(url, seconds: 1)
        default: try AudioFiles.flac(url, seconds: 1)
        }
        for tag in tagged.tags {
            try AudioFiles.tag(url, tag)
        }
        return url
    }
}
