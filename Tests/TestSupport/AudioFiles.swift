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

    /// Opus in Ogg.
    public static func opus(_ url: URL, seconds: Double, frequency: Int = 440) throws {
        try gst("audiotestsrc num-buffers=\(buffers(forSeconds: seconds)) freq=\(frequency) ! audioconvert"
                + " ! audioresample ! opusenc ! oggmux", to: url)
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

    /// A mono 16-bit 44.1 kHz WAV file of `samples`.
    public static func wavData(_ samples: [Int16]) -> Data {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + samples.count * 2)); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(1); u16(1); u32(UInt32(sampleRate)); u32(UInt32(sampleRate * 2))
        u16(2); u16(16)
        data.append(contentsOf: Array("data".utf8)); u32(UInt32(samples.count * 2))
        for sample in samples { withUnsafeBytes(of: sample.littleEndian) { data.append(contentsOf: $0) } }
        return data
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

    // MARK: - Lyrics and other tags (python3-mutagen)

    /// Tags written into a file with mutagen (Debian's python3-mutagen), as taggers write them: words (lyrics) and
    /// what a tagger adds beside them (a series).
    public enum TagWords: Sendable {
        /// ID3 `USLT` (ID3v2.4, or 2.3 with `id3v2_3`) in UTF-8.
        case uslt(String, id3v2_3: Bool = false)
        /// ID3 `SYLT` in milliseconds, UTF-16 with a byte order mark: (start in ms, text) per piece.
        case sylt([(milliseconds: Int, text: String)], id3v2_3: Bool = false)
        /// A Vorbis comment (Ogg Vorbis, Opus, FLAC): `LYRICS`, `UNSYNCEDLYRICS`.
        case vorbisComment(String, String)
        /// MP4's `©lyr`.
        case mp4(String)
        /// An ID3v2.4 frame as given (its content, after the 10-byte header), for what mutagen would not write.
        case id3Frame(String, [UInt8])
        /// ID3 `TXXX`: a description and a value, in UTF-8 (ID3v2.4) or UTF-16 (2.3).
        case id3UserText(String, String, id3v2_3: Bool = false)
        /// An ID3 text frame (`MVNM`, `MVIN`), as `id3UserText`.
        case id3Text(String, String, id3v2_3: Bool = false)
        /// An MP4 text item by mutagen's key: "©mvn", or "----:com.apple.iTunes:SERIES" for a freeform item.
        case mp4Text(String, String)
        /// An MP4 number item ("©mvi").
        case mp4Number(String, Int)
    }

    /// Adds `words` to the tags of `url`.
    public static func tag(_ url: URL, _ words: TagWords) throws {
        let script = #"""
            import sys, json
            from mutagen import File
            from mutagen.id3 import ID3, USLT, SYLT, TXXX, Frames, Encoding
            from mutagen.mp4 import MP4, MP4FreeForm
            path, kind, value, version = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), int(sys.argv[4])
            if kind in ("uslt", "sylt", "raw", "txxx", "text"):
                try: tags = ID3(path)
                except Exception: tags = ID3()
                if kind == "uslt": tags.add(USLT(encoding=Encoding.UTF8, lang="eng", desc="", text=value))
                elif kind == "sylt": tags.add(SYLT(encoding=Encoding.UTF16, lang="eng", format=2, type=1, desc="",
                                                   text=[(text, ms) for ms, text in value]))
                text_encoding = Encoding.UTF8 if version == 4 else Encoding.UTF16
                if kind == "txxx": tags.add(TXXX(encoding=text_encoding, desc=value[0], text=value[1]))
                elif kind == "text": tags.add(Frames[value[0]](encoding=text_encoding, text=value[1]))
                tags.save(path, v2_version=version)
                if kind == "raw":
                    frame_id, content = value[0], bytes(value[1])
                    data = open(path, "rb").read()
                    size = ((data[6] & 127) << 21) | ((data[7] & 127) << 14) | ((data[8] & 127) << 7) | (data[9] & 127)
                    def syncsafe(n): return bytes([(n >> 21) & 127, (n >> 14) & 127, (n >> 7) & 127, n & 127])
                    frame = frame_id.encode() + syncsafe(len(content)) + b"\0\0" + content
                    end = 10  # past the last frame: the padding follows
                    while end + 10 <= 10 + size and data[end] != 0:
                        end += 10 + (((data[end + 4] & 127) << 21) | ((data[end + 5] & 127) << 14) | ((data[end + 6] & 127) << 7) | (data[end + 7] & 127))
                    body = data[10:end] + frame
                    open(path, "wb").write(data[:5] + b"\0" + syncsafe(len(body)) + body + data[10 + size:])
            elif kind == "mp4":
                key, item = value
                tags = MP4(path); tags[key] = [MP4FreeForm(item.encode()) if key.startswith("----:") else item]; tags.save()
            else:
                tags = File(path); tags[value[0]] = value[1]; tags.save()
            """#
        let (kind, value, version): (String, Any, Int)
        switch words {
        case .uslt(let text, let v3): (kind, value, version) = ("uslt", text, v3 ? 3 : 4)
        case .sylt(let pieces, let v3): (kind, value, version) = ("sylt", pieces.map { [$0.milliseconds, $0.text] as [Any] }, v3 ? 3 : 4)
        case .vorbisComment(let key, let text): (kind, value, version) = ("comment", [key, text], 4)
        case .mp4(let text): (kind, value, version) = ("mp4", ["\u{A9}lyr", text], 4)
        case .id3Frame(let id, let content): (kind, value, version) = ("raw", [id, content.map(Int.init)] as [Any], 4)
        case .id3UserText(let description, let text, let v3): (kind, value, version) = ("txxx", [description, text], v3 ? 3 : 4)
        case .id3Text(let id, let text, let v3): (kind, value, version) = ("text", [id, text], v3 ? 3 : 4)
        case .mp4Text(let key, let text): (kind, value, version) = ("mp4", [key, text], 4)
        case .mp4Number(let key, let number): (kind, value, version) = ("mp4", [key, number] as [Any], 4)
        }
        // In a file: words of megabytes are more than an argument may hold.
        let json = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).words.json")
        try JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed).write(to: json)
        defer { try? FileManager.default.removeItem(at: json) }
        // Debian's python3, where python3-mutagen is: another python3 may come first on PATH.
        try run("/usr/bin/python3", ["-c", script, url.path, kind, json.path, "\(version)"])
    }

    /// Re-tags `url` in place as taggers do (Picard and beets use mutagen): its title set, its audio untouched; with
    /// `id3v1`, an MP3 gets an ID3v1 tag at its end too. Debian's python3-mutagen, for the system's Python.
    public static func retag(_ url: URL, title: String, id3v1: Bool = false) throws {
        let script = """
            import sys, mutagen, mutagen.wave, mutagen.id3
            f = mutagen.File(sys.argv[1], easy=True)
            if f.tags is None: f.add_tags()
            if isinstance(f, mutagen.wave.WAVE): f.tags.add(mutagen.id3.TIT2(encoding=3, text=sys.argv[2]))  # no easy keys
            else: f['title'] = sys.argv[2]
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
