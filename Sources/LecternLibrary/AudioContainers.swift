/// Where the audio is in the containers whose tags sit among their own structures: an Ogg stream's pages after its
/// header packets (Vorbis comments, OpusTags), a WAV file's `data` chunk. Used by ``FileFingerprint``.
enum AudioContainers {
    /// The `data` chunk's content of a RIFF WAVE file; nil when `file` is no WAV or has no such chunk. Taggers add
    /// `LIST` and `id3 ` chunks and rewrite the RIFF size: the samples stay as they are.
    static func wavData(_ file: borrowing RegularFile) -> Range<Int>? {
        guard let header = file.read(at: 0, count: 12), header[0..<4].elementsEqual("RIFF".utf8),
              header[8..<12].elementsEqual("WAVE".utf8) else { return nil }
        var offset = 12
        for _ in 0..<1024 {
            guard let chunk = file.read(at: offset, count: 8) else { return nil }
            let length = chunk[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
            if chunk[0..<4].elementsEqual("data".utf8) {
                // A streamed WAV may say 0 or 0xFFFFFFFF: its data runs to the end.
                let end = length == 0 || offset + 8 + length > file.size ? file.size : offset + 8 + length
                return offset + 8 < end ? offset + 8..<end : nil
            }
            offset += 8 + length + length % 2
        }
        return nil
    }

    /// An Ogg page: where it starts, the length of its header and of its payload.
    struct OggPage {
        var offset: Int
        var headerLength: Int
        var payloadLength: Int
        /// The lacing values: a value below 255 ends a packet.
        var lacing: ArraySlice<UInt8>
        var beginsStream: Bool
        var end: Int { offset + headerLength + payloadLength }
        var payload: Range<Int> { offset + headerLength..<end }
    }

    /// The page at `offset`; nil when there is none there, or it runs past the end of the file.
    static func oggPage(_ file: borrowing RegularFile, at offset: Int) -> OggPage? {
        guard let header = file.read(at: offset, count: 27), header[0..<4].elementsEqual("OggS".utf8), header[4] == 0,
              header[5] & ~0x07 == 0, let lacing = file.read(at: offset + 27, count: Int(header[26])) else { return nil }
        let page = OggPage(offset: offset, headerLength: 27 + lacing.count, payloadLength: lacing.reduce(0) { $0 + Int($1) },
                           lacing: lacing[...], beginsStream: header[5] & 0x02 != 0)
        return page.end <= file.size ? page : nil
    }

    /// Where an Ogg Vorbis or Opus stream's audio pages start: after the page that ends its header packets (three for
    /// Vorbis, two for Opus; each codec starts its audio on a page of its own). nil when `file` is no Ogg file, holds
    /// another codec or several streams, or its headers don't add up.
    static func oggAudioStart(_ file: borrowing RegularFile) -> Int? {
        guard let first = oggPage(file, at: 0), first.beginsStream,
              let packet = file.read(at: first.payload.lowerBound, count: min(8, first.payloadLength)) else { return nil }
        let headers: Int
        if packet.starts(with: [0x01] + Array("vorbis".utf8)) {
            headers = 3
        } else if packet.elementsEqual("OpusHead".utf8) {
            headers = 2
        } else {
            return nil
        }
        var packets = 0
        var page = first
        // Comments may carry pictures of megabytes: thousands of pages, each a read of its header.
        for _ in 0..<20_000 {
            packets += page.lacing.filter { $0 < 255 }.count
            if packets >= headers { return packets == headers && page.lacing.last.map({ $0 < 255 }) == true ? page.end : nil }
            guard let next = oggPage(file, at: page.end), !next.beginsStream else { return nil }
            page = next
        }
        return nil
    }

    /// The payloads of the pages from the first that starts at or after `offset` (within `audio`), until `count`
    /// bytes of payload or the end of `audio`: what a window of an Ogg stream's audio holds, whatever its pages'
    /// numbers and checksums (which grow or shift when the comments before them do).
    static func oggPayloads(_ file: borrowing RegularFile, in audio: Range<Int>, from offset: Int, count: Int) -> [Range<Int>] {
        var at = max(offset, audio.lowerBound)
        var page: OggPage?
        // The next capture pattern "OggS" that starts a whole page.
        while page == nil, at < audio.upperBound {
            guard let bytes = file.read(at: at, count: min(64 * 1024, audio.upperBound - at)) else { return [] }
            guard let found = bytes.indices.first(where: { index in
                index + 4 <= bytes.count && bytes[index] == 0x4F && bytes[index + 1] == 0x67 && bytes[index + 2] == 0x67
                    && bytes[index + 3] == 0x53 && oggPage(file, at: at + index) != nil
            }) else {
                at += max(1, bytes.count - 3)
                continue
            }
            page = oggPage(file, at: at + found)
        }
        var runs: [Range<Int>] = []
        var taken = 0
        while let current = page, taken < count, current.end <= audio.upperBound {
            let run = current.payload.lowerBound..<current.payload.lowerBound + min(current.payloadLength, count - taken)
            runs.append(run)
            taken += run.count
            page = oggPage(file, at: current.end)
        }
        return runs
    }
}
