import Foundation
import GStreamer
import Testing
import TestSupport
@testable import LecternMedia

/// MP3Probe says of an MP3 file what the discoverer says (to the nanosecond), or leaves it to the discoverer.
@Suite struct MP3ProbeTests {
    /// Files as LAME (through FFmpeg) writes them: sample rates of MPEG-1, 2 and 2.5, mono and stereo, CBR and VBR,
    /// tags in ID3v2.3 and 2.4, Latin-1, UTF-16 and UTF-8, ID3v1 alone or after ID3v2, numeric genres, user texts.
    static let cases: [(name: String, arguments: [String])] = [
        ("plain", ["-ar", "44100"]),
        ("tagged 2.4", ["-ar", "44100", "-metadata", "title=Part One", "-metadata", "artist=Ann Author",
                        "-metadata", "album=A Book", "-metadata", "album_artist=The Reader", "-metadata", "genre=Audiobook",
                        "-metadata", "track=3/12", "-metadata", "disc=2"]),
        ("tagged 2.3", ["-ar", "48000", "-id3v2_version", "3", "-metadata", "title=Brontë’s Émile", "-metadata", "artist=Zoë",
                        "-metadata", "album=Straße", "-metadata", "track=7"]),
        ("mono 22050 VBR", ["-ar", "22050", "-ac", "1", "-q:a", "4", "-metadata", "title=Mono"]),
        ("mono 8000", ["-ar", "8000", "-ac", "1", "-metadata", "title=Eight"]),
        ("stereo 32000 VBR", ["-ar", "32000", "-ac", "2", "-q:a", "2"]),
        ("long", ["-ar", "44100", "-t", "61.3"]),
        // Older rips: ID3v1 with ID3v2 (alone: below); numeric genres (ID3v1's list) and user texts (TXXX).
        ("ID3v1 and 2.3", ["-ar", "44100", "-id3v2_version", "3", "-write_id3v1", "1", "-metadata", "title=Both",
                           "-metadata", "album=Two Tags", "-metadata", "track=2/9"]),
        ("numeric genre", ["-ar", "44100", "-metadata", "title=Rock", "-metadata", "genre=(17)"]),
        ("user text", ["-ar", "44100", "-metadata", "title=Texts", "-metadata", "NARRATEDBY=Someone Else",
                       "-metadata", "MusicBrainz Album Id=7a4c5b1e-0000-4000-8000-000000000000"]),
    ]

    @Test(arguments: cases.map(\.name))
    func theProbeSaysWhatTheDiscovererSays(_ name: String) async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("file.mp3")
        let arguments = Self.cases.first { $0.name == name }!.arguments
        let seconds = arguments.contains("-t") ? [] : ["-t", "2.5"]
        try await offThePool {
            try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=70"] + seconds + arguments
                                  + ["-c:a", "libmp3lame", file.path])
        }
        let probed = try #require(MP3Probe.read(file.path), "the probe left \(name) to the discoverer")
        let discovered = try await offThePool { try Discoverer.Reader(timeout: .seconds(10)).discover(file) }
        #expect(probed == discovered)
    }

    /// GStreamer's own encoder and Xing writer (lamemp3enc, xingmux, id3v2mux: a padded ID3v2.4 tag, another layout).
    @Test func aFileWrittenByGStreamerIsReadAlike() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("gst.mp3")
        let discovered = try await offThePool {
            try AudioFiles.gst("audiotestsrc num-buffers=100 ! audioconvert ! lamemp3enc ! xingmux ! id3v2mux", to: file)
            return try Discoverer.Reader(timeout: .seconds(10)).discover(file)
        }
        let probed = try #require(MP3Probe.read(file.path))
        #expect(probed == discovered)
    }

    @Test func aCoverIsTheDiscoverersToo() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let plain = folder.url.appendingPathComponent("plain.mp3")
        let cover = folder.url.appendingPathComponent("cover.png")
        let file = folder.url.appendingPathComponent("covered.mp3")
        try await offThePool {
            try AudioFiles.mp3(plain, seconds: 2, tags: .init(title: "T", artist: "A", album: "B"))
            try AudioFiles.png(cover)
            try AudioFiles.mp3WithCover(plain, cover: cover, output: file)
        }
        let probed = try #require(MP3Probe.read(file.path))
        #expect(probed.cover?.mimeType == "image/png")
        #expect(probed == (try await offThePool { try Discoverer.Reader(timeout: .seconds(10)).discover(file) }))
    }

    /// Lyrics: GStreamer 1.22 maps neither USLT nor SYLT, both are read from the frame (``TagLyrics``), by the probe
    /// and after the discoverer alike.
    @Test(arguments: [false, true])
    func lyricsAreReadAlike(_ id3v2_3: Bool) async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let unsynced = folder.url.appendingPathComponent("uslt.mp3")
        let synced = folder.url.appendingPathComponent("sylt.mp3")
        try await offThePool {
            try AudioFiles.mp3(unsynced, seconds: 2, tags: .init(title: "T"))
            try FileManager.default.copyItem(at: unsynced, to: synced)
            try AudioFiles.tag(unsynced, .uslt("Brontë’s\nsecond line", id3v2_3: id3v2_3))
            try AudioFiles.tag(synced, .sylt([(500, "one"), (61_250, "two")], id3v2_3: id3v2_3))
            try AudioFiles.tag(synced, .uslt("the unsynced words", id3v2_3: id3v2_3))
        }
        let files = [(unsynced, "Brontë’s\nsecond line"), (synced, "[00:00.500]one\n[01:01.250]two")]
        let read = try await offThePool {
            let reader = try Discoverer.Reader(timeout: .seconds(10))
            return try files.map { try reader.discover($0.0) }
        }
        for ((file, words), discovered) in zip(files, read) {
            let probed = try #require(MP3Probe.read(file.path), "the probe left \(file.lastPathComponent) to the discoverer")
            #expect(probed.lyrics == .text(words), "synced ones first")
            #expect(discovered.lyrics == probed.lyrics)
            #expect(probed == discovered)
        }
    }

    /// A series (TXXX, MVNM, MVIN: GStreamer 1.22 maps none of them) is read by the probe and after the discoverer
    /// alike.
    @Test(arguments: SeriesTags.names(["mp3"]))
    func theSeriesIsReadAlike(_ name: String) async throws {
        let tagged = SeriesTags.named(name)
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let file = try await offThePool { try SeriesTags.file(tagged, in: folder.url) }
        let probed = try #require(MP3Probe.read(file.path), "the probe left \(name) to the discoverer")
        #expect(probed.series == tagged.series)
        #expect(probed.seriesPart == tagged.part)
        #expect(probed == (try await offThePool { try Discoverer.Reader(timeout: .seconds(10)).discover(file) }))
    }

    /// SYLT pieces that start with a line feed start a line; the others go on the line (syllables), as ID3 says.
    @Test func syllablesMakeLines() {
        var content: [UInt8] = [3] + Array("eng".utf8) + [2, 1, 0]
        for (text, start) in [("\nHel", 1000), ("lo", 1500), ("\nworld", 2000)] {
            content += Array(text.utf8) + [0] + withUnsafeBytes(of: UInt32(start).bigEndian, Array.init)
        }
        #expect(TagLyrics.id3Frame(id: "SYLT", content: content) == .text("[00:01.000]Hello\n[00:02.000]world"))
    }

    /// An older rip: an ID3v1 tag alone (FFmpeg writes one only beside an ID3v2 tag: that one is cut off).
    @Test func anID3v1TagAloneIsReadAsTheDiscovererReadsIt() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let both = folder.url.appendingPathComponent("both.mp3")
        let file = folder.url.appendingPathComponent("file.mp3")
        try await offThePool {
            try AudioFiles.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=2.5", "-write_id3v1", "true",
                                   "-metadata", "title=Old Rip", "-metadata", "artist=Someone", "-metadata", "album=Tape One",
                                   "-metadata", "genre=Blues", "-metadata", "track=4", "-c:a", "libmp3lame", both.path])
            try AudioFiles.withoutID3v2(both).write(to: file)
        }
        let bytes = try Data(contentsOf: file)
        try #require(!bytes.starts(with: Data("ID3".utf8)) && bytes.suffix(128).starts(with: Data("TAG".utf8)))
        let probed = try #require(MP3Probe.read(file.path))
        #expect(probed == (try await offThePool { try Discoverer.Reader(timeout: .seconds(10)).discover(file) }))
        #expect(probed.title == "Old Rip" && probed.artists == ["Someone"] && probed.genre == "Blues" && probed.trackNumber == 4)
    }

    /// An ID3v1 tag that says other things than the ID3v2 tag before it: merged as id3demux merges them, ID3v2's
    /// values first, ID3v1's where ID3v2 has none.
    @Test func anID3v1TagIsMergedAsTheDiscovererMergesIt() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("file.mp3")
        try await offThePool { try AudioFiles.mp3(file, seconds: 2, tags: .init(title: "From ID3v2", album: "The Book")) }
        func field(_ text: String, _ count: Int) -> [UInt8] { Array(Array(text.utf8).prefix(count)) + Array(repeating: 0, count: max(0, count - text.utf8.count)) }
        // "TAG", title, artist, album (30 each), year (4), comment (28), 0 and the track (ID3v1.1), the genre.
        let v1 = Array("TAG".utf8) + field("From ID3v1", 30) + field("Old Artist", 30) + field("Old Album", 30) + field("1999", 4)
            + field("", 28) + [0, 5] + [17]
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(v1))
        try handle.close()
        let probed = try #require(MP3Probe.read(file.path))
        #expect(probed == (try await offThePool { try Discoverer.Reader(timeout: .seconds(10)).discover(file) }))
        #expect(probed.title == "From ID3v2" && probed.album == "The Book")
        #expect(probed.artists == ["Old Artist"] && probed.genre == "Rock" && probed.trackNumber == 5)
    }

    @Test func whatItDoesNotKnowIsLeftToTheDiscoverer() async throws {
        let folder = try TemporaryDirectory(prefix: "lectern-mp3probe")
        defer { folder.remove() }
        let file = folder.url.appendingPathComponent("file.mp3")
        try await offThePool { try AudioFiles.mp3(file, seconds: 2, tags: .init(title: "T", artist: "A", album: "B")) }
        let bytes = try Data(contentsOf: file)
        func variant(_ name: String, _ change: (inout Data) -> Void) throws -> String {
            var data = bytes
            change(&data)
            let url = folder.url.appendingPathComponent(name)
            try data.write(to: url)
            return url.path
        }
        // An APE tag at the end (alone, or before an ID3v1 tag), a truncated stream, no ID3 tag and no Xing header
        // (random bytes).
        let ape = Data("APETAGEX".utf8) + Data([0xD0, 0x07, 0, 0, 32, 0, 0, 0]) + Data(count: 16)
        let withAPE = try variant("ape.mp3") { $0.append(ape) }
        let withAPEAndV1 = try variant("ape-v1.mp3") { $0.append(ape + Data("TAG".utf8) + Data(count: 125)) }
        let truncated = try variant("cut.mp3") { $0 = $0.prefix($0.count / 2) }
        let noise = try variant("noise.mp3") { $0 = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7919) }) }
        #expect(MP3Probe.read(file.path) != nil)
        #expect(MP3Probe.read(withAPE) == nil)
        #expect(MP3Probe.read(withAPEAndV1) == nil)
        #expect(MP3Probe.read(truncated) == nil)
        #expect(MP3Probe.read(noise) == nil)
        let chaptered = folder.url.appendingPathComponent("chapters.mp3")
        let metadata = folder.url.appendingPathComponent("chapters.txt")
        try ";FFMETADATA1\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=One\n".write(to: metadata, atomically: true, encoding: .utf8)
        try await offThePool {
            try AudioFiles.ffmpeg(["-i", file.path, "-i", metadata.path, "-map_metadata", "1", "-map_chapters", "1", "-c", "copy", chaptered.path])
        }
        #expect(MP3Probe.read(chaptered.path) == nil)
    }
}
