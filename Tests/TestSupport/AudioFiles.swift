import Foundation

/// Makes small audio files (and a cover image) for tests with `gst-launch-1.0` and `ffmpeg`, run through
/// ``Subprocess`` (never Foundation.Process).
///
/// ```swift
/// let dir = try TemporaryDirectory()
/// try AudioFiles.ogg(dir.appending("1.ogg"), seconds: 3)
/// try AudioFiles.mp3(dir.appending("t.mp3"), seconds: 3, tags: .init(title: "One", artist: "Ann", album: "Book"))
/// ```
///
/// Durations: `ogg`, `wav` and `flac` use `audiotestsrc num-buffers=N` with 1024 samples at 44.1 kHz a buffer,
/// so a file lasts `N * 1024 / 44100` s (≈ 23.2 ms a buffer); `seconds:` picks the nearest N.
public enum AudioFiles {
    /// Tags written by the ffmpeg-made files; nil fields are left out.
    public struct Tags: Sendable, Equatable {
        public var title: String?
        public var artist: String?
        public var album: String?
        public var albumArtist: String?
        public var genre: String?
        public var track: Int?
        public var disc: Int?

        public init(title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
                    genre: String? = nil, track: Int? = nil, disc: Int? = nil) {
            self.title = title
            self.artist = artist
            self.album = album
            self.albumArtist = albumArtist
            self.genre = genre
            self.track = track
            self.disc = disc
        }

        var ffmpegArguments: [String] {
            var out: [String] = []
            func add(_ key: String, _ value: String?) { if let value { out += ["-metadata", "\(key)=\(value)"] } }
            add("title", title)
            add("artist", artist)
            add("album", album)
            add("album_artist", albumArtist)
            add("genre", genre)
            add("track", track.map(String.init))
            add("disc", disc.map(String.init))
            return out
        }
    }

    /// A tool exited non-zero (or could not run).
    public struct ToolFailed: Error, CustomStringConvertible {
        public let command: [String]
        public let status: Int32
        public let output: String
        public var description: String { "\(command.joined(separator: " ")) exited \(status): \(output)" }
    }

    /// Samples per `audiotestsrc` buffer (its default) and the sample rate of its output.
    public static let samplesPerBuffer = 1024
    public static let sampleRate = 44_100

    /// The `num-buffers` giving about `seconds` of audio.
    public static func buffers(forSeconds seconds: Double) -> Int {
        max(1, Int((seconds * Double(sampleRate) / Double(samplesPerBuffer)).rounded()))
    }

    /// The duration of `buffers` audiotestsrc buffers.
    public static func duration(ofBuffers buffers: Int) -> Duration {
        .microseconds(Int64(buffers) * Int64(samplesPerBuffer) * 1_000_000 / Int64(sampleRate))
    }

    // MARK: - GStreamer-made files (no tags)

    /// Vorbis in Ogg, a sine at `frequency` Hz.
    public static func ogg(_ url: URL, seconds: Double, frequency: Int = 440) throws {
        try gst("audiotestsrc num-buffers=\(buffers(forSeconds: seconds)) freq=\(frequency) ! audioconvert"
                + " ! vorbisenc ! oggmux", to: url)
    }

    /// PCM WAV (S16LE, mono).
    public static func wav(_ url: URL, seconds: Double, frequency: Int = 440) throws {
        try gst("audiotestsrc num-buffers=\(buffers(forSeconds: seconds)) freq=\(frequency) ! audioconvert"
                + " ! audio/x-raw,format=S16LE,channels=1 ! wavenc", to: url)
    }

    /// FLAC.
    public static func flac(_ url: URL, seconds: Double, frequency: Int = 440) throws {
        try gst("audiotestsrc num-buffers=\(buffers(forSeconds: seconds)) freq=\(frequency) ! audioconvert"
                + " ! flacenc", to: url)
    }

    /// A PNG of `width`×`height` (one videotestsrc frame), e.g. a cover.
    public static func png(_ url: URL, width: Int = 64, height: Int = 64) throws {
        try gst("videotestsrc num-buffers=1 ! video/x-raw,width=\(width),height=\(height) ! pngenc", to: url)
    }

    // MARK: - ffmpeg-made files (tagged)

    /// MP3 (LAME, ID3v2 tags, Xing header) of a sine.
    public static func mp3(_ url: URL, seconds: Double, frequency: Int = 440, tags: Tags = Tags()) throws {
        try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=\(seconds)"] + tags.ffmpegArguments
                   + ["-c:a", "libmp3lame", url.path])
    }

    /// AAC in an MP4 container; an `.m4b` extension gives an audiobook file.
    public static func m4b(_ url: URL, seconds: Double, frequency: Int = 440, tags: Tags = Tags()) throws {
        try ffmpeg(["-f", "lavfi", "-i", "sine=frequency=\(frequency):duration=\(seconds)"] + tags.ffmpegArguments
                   + ["-c:a", "aac", url.path])
    }

    /// `mp3` with `cover` (a PNG or JPEG) embedded as its front cover (ID3v2.3 APIC), written to `output`.
    public static func mp3WithCover(_ mp3: URL, cover: URL, output: URL) throws {
        try ffmpeg(["-i", mp3.path, "-i", cover.path, "-map", "0", "-map", "1", "-c", "copy", "-id3v2_version", "3",
                    "-metadata:s:v", "title=Album cover", "-metadata:s:v", "comment=Cover (front)", output.path])
    }

    /// Re-tags `url` in place as taggers do (Picard and beets use mutagen): its title set, its audio untouched; with
    /// `id3v1`, an MP3 gets an ID3v1 tag at its end too. Debian's python3-mutagen, for the system's Python.
    public static func retag(_ url: URL, title: String, id3v1: Bool = false) throws {
        let script = """
            import sys, mutagen
            f = mutagen.File(sys.argv[1], easy=True)
            if f.tags is None: f.add_tags()
            f['title'] = sys.argv[2]
            f.save(**({'v1': 2} if sys.argv[3] == '1' else {}))
            """
        try run("/usr/bin/python3", ["-c", script, url.path, title, id3v1 ? "1" : "0"])
    }

    /// The bytes of `url` less the ID3v2 tag at its start, if any (to leave an ID3v1 tag alone: FFmpeg writes one
    /// only with an ID3v2 tag).
    public static func withoutID3v2(_ url: URL) throws -> Data {
        let bytes = try Data(contentsOf: url)
        guard bytes.count >= 10, bytes.starts(with: Data("ID3".utf8)) else { return bytes }
        let length = bytes[bytes.startIndex + 6..<bytes.startIndex + 10].reduce(0) { $0 << 7 | Int($1 & 0x7f) }
        return bytes.dropFirst(10 + length)
    }

    // MARK: - Running the tools

    /// Runs `gst-launch-1.0 -q` on a pipeline description (split on spaces: no spaces inside values).
    public static func gst(_ pipeline: String) throws {
        try run("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init))
    }

    /// `pipeline` ending in a file sink writing `url` (its path one argument: it may hold spaces).
    public static func gst(_ pipeline: String, to url: URL) throws {
        try run("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init) + ["!", "filesink", "location=" + url.path])
    }

    /// Runs `ffmpeg` quietly, overwriting its output.
    public static func ffmpeg(_ arguments: [String]) throws {
        try run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments)
    }

    private static func run(_ tool: String, _ arguments: [String]) throws {
        let result = try Subprocess.run(tool, arguments, timeout: .seconds(60))
        guard result.status == 0 else {
            throw ToolFailed(command: [tool] + arguments, status: result.status, output: result.stdout + result.stderr)
        }
    }
}
