import Foundation

/// Small audio (and non-audio) files for tests, made with gst-launch-1.0 and ffmpeg in a temporary directory.
///
/// ```swift
/// let files = try await AudioFixtures.shared()
/// let info = try Discoverer.discover(files.url(.ogg10s))
/// ```
/// Files are generated once per test process, on first use, and shared by all tests (read-only).
public final class AudioFixtures: Sendable {
    /// A generated file and what it contains.
    public enum File: String, CaseIterable, Sendable {
        /// A 320×240 PNG (one videotestsrc frame). Listed first: ``mp3WithCover`` embeds it.
        case png = "cover.png"
        /// Vorbis in Ogg, 430 × 1024 samples at 44.1 kHz mono ≈ 9.985 s, no tags.
        case ogg10s = "tone-10s.ogg"
        /// Vorbis in Ogg, 2 s.
        case ogg2sA = "tone-2s-a.ogg"
        /// Vorbis in Ogg, 2 s (another tone).
        case ogg2sB = "tone-2s-b.ogg"
        /// WAV S16LE mono 44.1 kHz, exactly 88_200 samples (2 s).
        case wav2s = "tone-2s.wav"
        /// WAV S16LE mono 44.1 kHz, exactly 66_150 samples (1.5 s).
        case wav1500ms = "tone-1500ms.wav"
        /// FLAC, 3 s.
        case flac3s = "tone-3s.flac"
        /// MP3 (LAME, ID3v2 + Xing via ffmpeg), 3 s, tagged with ``Tags``.
        case mp3Tagged = "tagged.mp3"
        /// ``mp3Tagged`` plus an embedded front cover (``png``).
        case mp3WithCover = "cover.mp3"
        /// AAC in an M4B (ffmpeg ipod muxer), 4 s, tagged with ``Tags``.
        case m4bTagged = "tagged.m4b"
        /// Plain text.
        case text = "notes.txt"
    }

    /// The tags written into the tagged files.
    public enum Tags {
        public static let title = "Chapter One: The Beginning"
        public static let artist = "Ann Author"
        public static let album = "A Long Book"
        public static let albumArtist = "Ann Author & Friends"
        public static let genre = "Audiobook"
        public static let track = 3
        public static let disc = 2
        public static let all = AudioFiles.Tags(title: title, artist: artist, album: album, albumArtist: albumArtist,
                                         genre: genre, track: track, disc: disc)
    }

    public let directory: URL

    /// The process-wide fixtures, generated on first call (blocks while generating, a few seconds).
    public static func shared() async throws -> AudioFixtures {
        AudioFixtures(directory: try await GeneratedFiles.directory("gst-fixtures") { root in
            for file in File.allCases { try make(file, in: root) }
        })
    }

    private init(directory: URL) {
        self.directory = directory
    }

    public func url(_ file: File) -> URL {
        directory.appendingPathComponent(file.rawValue)
    }

    /// A fresh path in the fixture directory for a test's output.
    public func scratchURL(_ name: String) -> URL {
        directory.appendingPathComponent("\(UUID().uuidString.prefix(8))-\(name)")
    }

    // MARK: Generation

    private static func make(_ file: File, in root: URL) throws {
        func url(_ file: File) -> URL { root.appendingPathComponent(file.rawValue) }
        let out = url(file).path
        switch file {
        case .ogg10s:
            try AudioFiles.gst("audiotestsrc num-buffers=430 ! audioconvert ! vorbisenc ! oggmux ! filesink location=\(out)")
        case .ogg2sA:
            try AudioFiles.gst("audiotestsrc num-buffers=86 samplesperbuffer=1025 freq=440 ! audioconvert ! vorbisenc ! oggmux ! filesink location=\(out)")
        case .ogg2sB:
            try AudioFiles.gst("audiotestsrc num-buffers=86 samplesperbuffer=1025 freq=660 ! audioconvert ! vorbisenc ! oggmux ! filesink location=\(out)")
        case .wav2s:
            try AudioFiles.gst("audiotestsrc num-buffers=20 samplesperbuffer=4410 freq=440 ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc ! filesink location=\(out)")
        case .wav1500ms:
            try AudioFiles.gst("audiotestsrc num-buffers=15 samplesperbuffer=4410 freq=880 ! audio/x-raw,format=S16LE,channels=1,rate=44100 ! wavenc ! filesink location=\(out)")
        case .flac3s:
            try AudioFiles.gst("audiotestsrc num-buffers=30 samplesperbuffer=4410 ! audioconvert ! flacenc ! filesink location=\(out)")
        case .mp3Tagged:
            try AudioFiles.mp3(url(file), seconds: 3, tags: Tags.all)
        case .mp3WithCover:
            try AudioFiles.mp3WithCover(url(.mp3Tagged), cover: url(.png), output: url(file))
        case .m4bTagged:
            try AudioFiles.m4b(url(file), seconds: 4, tags: Tags.all)
        case .png:
            try AudioFiles.gst("videotestsrc num-buffers=1 ! video/x-raw,width=320,height=240 ! pngenc ! filesink location=\(out)")
        case .text:
            try Data("These are not the sounds you are looking for.\n".utf8).write(to: url(file))
        }
    }

    // MARK: Reading WAV output

    /// The number of sample frames in a PCM WAV file (the "data" chunk size divided by the frame size).
    public static func wavFrameCount(_ url: URL) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: url))
        func u32(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        var offset = 12
        var blockAlign = 0
        while offset + 8 <= bytes.count {
            let id = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            if id == "fmt " { blockAlign = u16(offset + 8 + 12) }
            if id == "data" {
                precondition(blockAlign > 0, "fmt chunk must precede data")
                return min(size, bytes.count - offset - 8) / blockAlign
            }
            offset += 8 + size + (size & 1)
        }
        return 0
    }
}
