import Foundation
import GStreamer
import Logging
import Testing
import TestSupport
@testable import LecternMedia

/// The media reader: lecternd reads media files in a child process (`lecternd --media-reader`). The real child,
/// and shell scripts standing in for a child that crashes, hangs or answers nonsense.
@Suite("Media reader")
struct MediaReaderTests {
    let files: AudioFixtures
    let scripts: TemporaryDirectory
    let lecternd = builtExecutable("lecternd").path

    init() async throws {
        files = try await AudioFixtures.shared()
        scripts = try TemporaryDirectory(prefix: "lectern-reader")
    }

    /// A reader starting `program` (default: the built lecternd). Its child stays between reads (the idle time is
    /// longer than any test) unless a test asks for a short one: a busy machine can hold a test for seconds.
    func reader(_ program: String? = nil, timeout: Duration = .seconds(5), answerGrace: Duration = .seconds(5),
                idleTime: Duration = .seconds(600), readsPerChild: Int = 5_000) -> MediaReader {
        MediaReader(program: program ?? lecternd, timeout: timeout, answerGrace: answerGrace, idleTime: idleTime,
                    readsPerChild: readsPerChild, logger: Logger(label: "test"))
    }

    /// An executable shell script in the test's folder.
    func script(_ name: String, _ body: String) throws -> String {
        let path = scripts.appending(name).path
        try writeShellScript(at: path, body)
        return path
    }

    /// Whether a process with that id exists (a zombie counts: it has not been reaped).
    func exists(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0
    }

    @Test("the child reads what the discoverer reads in this process: tags, cover bytes, duration, chapters",
          arguments: [AudioFixtures.File.mp3WithCover, .m4bTagged, .ogg10s, .flac3s, .wav2s])
    func sameAsInProcess(file: AudioFixtures.File) async throws {
        signal(SIGHUP, SIG_IGN)  // as the daemon does (it watches SIGHUP with a dispatch source): the child must not
        // Read in this process first: the child leaves after its idle time, which a wait between could outlast.
        let inProcess = try await offThePool { [files] in try Discoverer.discover(files.url(file)) }
        let reader = reader()
        let read = try await reader.read(files.url(file))
        #expect(read == inProcess)
        let child = try #require(reader.processID)
        #expect(child != getpid())
        #expect(try String(contentsOfFile: "/proc/\(child)/cmdline", encoding: .utf8)
            .split(separator: "\0").last == "--media-reader")
        // It starts with no signal ignored (this process, like the daemon, may ignore some) and holds nothing of
        // its parent's but the socket and the standard output and error.
        let status = try String(contentsOfFile: "/proc/\(child)/status", encoding: .utf8).split(separator: "\n")
        let ignored = status.first { $0.hasPrefix("SigIgn:") }.flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
        #expect(ignored.map { $0 & 0x7FFF_FFFF } == 0, "signals 1-31 ignored: \(status.filter { $0.hasPrefix("Sig") })")
        // Any other descriptor is one it made (the discoverer it keeps for the next file holds GStreamer's socket
        // pair), none of this process's.
        let fm = FileManager.default
        let targets = { (pid: String) in
            Set(try fm.contentsOfDirectory(atPath: "/proc/\(pid)/fd").filter { Int($0)! > 2 }
                .compactMap { try? fm.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") })
        }
        let (its, mine) = (try targets("\(child)"), try targets("self"))
        #expect(its.isDisjoint(with: mine), "\(its)")
        #expect(try Set(fm.contentsOfDirectory(atPath: "/proc/\(child)/fd")).isSuperset(of: ["0", "1", "2"]))
        await reader.stop()
        #expect(reader.processID == nil && !exists(child))
    }

    @Test("one child serves the reads that follow, and a file's error comes back as the same error")
    func errorsAndOneChild() async throws {
        // Read in this process first: the child leaves after its idle time, which a wait between could outlast.
        let inProcess: MediaError? = try await offThePool { [files] in
            do throws(MediaError) { _ = try Discoverer.discover(files.url(.text)); return nil } catch { return error }
        }
        let reader = reader()
        _ = try await reader.read(files.url(.ogg2sA))
        let child = reader.processID
        guard case .notAudio(let message)? = inProcess, message.contains(files.url(.text).path) else {
            Issue.record("the discoverer read a text file as \(String(describing: inProcess))")
            return
        }
        let error = await #expect(throws: MediaError.self) { try await reader.read(files.url(.text)) }
        #expect(error == inProcess)
        let missing = files.scratchURL("missing.ogg")
        await #expect(throws: MediaError.notFound("No such file: \(missing.path)")) { try await reader.read(missing) }
        _ = try await reader.read(files.url(.ogg2sB))
        #expect(reader.processID == child)
        // Its address space is limited (a file that makes a demuxer allocate without bound fails there).
        let limits = try String(contentsOfFile: "/proc/\(try #require(child))/limits", encoding: .utf8)
        let addressSpace = limits.split(separator: "\n").first { $0.hasPrefix("Max address space") }
        #expect(addressSpace?.split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).first
            == "\(MediaReader.addressSpaceLimit)")
        await reader.stop()
    }

    @Test("a child that crashes on a file: that file fails with how it ended, the next read starts another child")
    func crash() async throws {
        let crashing = try script("crash", "head -c 4 >/dev/null; kill -SEGV $$")
        let reader = reader(crashing)
        await #expect(throws: MediaError.failed(
            "\(files.url(.ogg2sA).path): the media reader stopped while reading it (killed by signal 11, Segmentation fault)")) {
            try await reader.read(files.url(.ogg2sA))
        }
        #expect(reader.processID == nil)
        await #expect(throws: MediaError.self) { try await reader.read(files.url(.ogg2sA)) }
        #expect(reader.childrenStarted == 2)
    }

    @Test("a child killed between two reads is replaced, and the read succeeds")
    func killedBetweenReads() async throws {
        let reader = reader()
        _ = try await reader.read(files.url(.ogg2sA))
        let first = try #require(reader.processID)
        kill(first, SIGKILL)
        // No wait: the next read may come while the killed child is still going (its threads not all gone).
        let info = try await reader.read(files.url(.flac3s))
        #expect(info.duration.map { abs(($0 - .seconds(3)).components.seconds) } == 0)
        let second = try #require(reader.processID)
        #expect(second != first)
        #expect(!exists(first))  // reaped, not left a zombie
        await reader.stop()
    }

    @Test("a child that does not answer is killed after the timeout and its grace; the file fails")
    func hang() async throws {
        let hanging = try script("hang", "echo $$ > \"$0.pid\"; exec sleep 60")
        let reader = reader(hanging, timeout: .milliseconds(200), answerGrace: .milliseconds(300))
        let started = ContinuousClock.now
        do {
            _ = try await reader.read(files.url(.ogg2sA))
            Issue.record("read a file through a child that never answers")
        } catch {
            #expect(error == .failed("\(files.url(.ogg2sA).path): the media reader did not answer within 0.5 s"))
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        let pid = try #require(pid_t(try String(contentsOfFile: hanging + ".pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)))
        #expect(!exists(pid))
        #expect(reader.processID == nil)
    }

    @Test("a child that answers nonsense is stopped; the file fails",
          arguments: [("a length of 544 MB", "echo 'not a reply' >&0"), ("three bytes that mean nothing", "printf '\\003\\000\\000\\000abc' >&0")])
    func nonsense(what: String, answer: String) async throws {
        let talking = try script("nonsense-\(answer.count)", "head -c 4 >/dev/null; \(answer); exec sleep 60")
        let reader = reader(talking)
        await #expect(throws: MediaError.failed("\(files.url(.ogg2sA).path): the media reader answered nonsense (killed by signal 9, Killed)")) {
            try await reader.read(files.url(.ogg2sA))
        }
        #expect(reader.processID == nil)
    }

    @Test("the child leaves after the idle time; a later read starts another")
    func idle() async throws {
        let reader = reader(idleTime: .seconds(1))
        _ = try await reader.read(files.url(.ogg2sA))
        #expect(reader.childrenStarted == 1)
        let child = reader.processID  // nil if this test resumed after the idle time (a busy machine)
        let gone = try await poll(timeout: .seconds(10)) {
            reader.processID == nil && child.map { !exists($0) } ?? true
        } until: { $0 }
        #expect(gone, "the child \(child.map { "\($0)" } ?? "?") still runs after the idle time")
        _ = try await reader.read(files.url(.ogg2sB))
        #expect(reader.childrenStarted == 2)
    }

    @Test("a child leaves after so many files; the next read starts another, and every read is answered")
    func readsPerChild() async throws {
        let reader = reader(readsPerChild: 2)
        let names: [AudioFixtures.File] = [.ogg2sA, .ogg2sB, .mp3Tagged, .flac3s, .wav2s]
        var children: [pid_t?] = []
        for file in names {
            #expect(try await reader.read(files.url(file)) == (try Discoverer.discover(files.url(file))), "\(file)")
            children.append(reader.processID)
        }
        // Two files each: the second read of a child ends it, the next read starts another.
        #expect(reader.childrenStarted == 3)
        #expect(children.map { $0 != nil } == [true, false, true, false, true], "\(children)")
        #expect(Set(children.compactMap { $0 }).count == 3)
        await reader.stop()
    }

    @Test("a program that exits at its first request (not a reader of this protocol): that file is read in this process")
    func notAReader() async throws {
        let other = try script("other", "head -c 4 >/dev/null; exit 3")
        let reader = reader(other)
        let info = try await reader.read(files.url(.mp3Tagged))
        #expect(info.title == AudioFixtures.Tags.title)
        #expect(reader.childrenStarted == 1)
        #expect(reader.processID == nil)
    }

    @Test("a child that exits at its first request with another status: that file fails, it is not read here")
    func exitsOtherwise() async throws {
        let other = try script("exits-1", "head -c 4 >/dev/null; exit 1")
        let reader = reader(other)
        await #expect(throws: MediaError.failed("\(files.url(.mp3Tagged).path): the media reader stopped while reading it (exit status 1)")) {
            try await reader.read(files.url(.mp3Tagged))
        }
    }

    @Test("no program (--media-reader-program none): files are read in this process")
    func noProgram() async throws {
        let reader = MediaReader(program: nil, logger: Logger(label: "test"))
        let info = try await reader.read(files.url(.mp3Tagged))
        #expect(info.title == AudioFixtures.Tags.title)
        #expect(reader.childrenStarted == 0)
    }

    @Test("a program that cannot start: files are read in this process")
    func cannotStart() async throws {
        let reader = reader(scripts.appending("no-such-program").path)
        let info = try await reader.read(files.url(.mp3Tagged))
        #expect(info.title == AudioFixtures.Tags.title)
        #expect(reader.processID == nil)
    }

    @Test("a book's series and its part come from the child, for every format (an MP4 file's read by the MP4 module)",
          arguments: SeriesTags.cases.map(\.name))
    func series(_ name: String) async throws {
        let tagged = SeriesTags.named(name)
        let folder = try TemporaryDirectory(prefix: "lectern-reader-series")
        defer { folder.remove() }
        let file = try await offThePool { try SeriesTags.file(tagged, in: folder.url) }
        let reader = reader()
        let read = try await reader.read(file)
        #expect(read.series == tagged.series)
        #expect(read.seriesPart == tagged.part)
        #expect(reader.processID != nil, "read by the child")
        await reader.stop()
        // Read in this process when no child can be started: the same.
        #expect(try await MediaReader(program: nil, logger: Logger(label: "test")).read(file) == read)
    }

    @Test("messages come back as sent, and a cut, padded or garbled message is refused, never a crash")
    func wire() throws {
        let full = MediaInfo(duration: .nanoseconds(9_985_000_123), title: "Title ü", artists: ["A", "", "B"], album: nil,
                             albumArtist: "AA", genre: nil, trackNumber: 0, discNumber: nil, hasAudio: true,
                             cover: MediaInfo.CoverImage(data: Data([0, 1, 2, 255]), mimeType: "image/png"),
                             chapters: [MediaInfo.Chapter(title: "One", start: .zero, end: .seconds(2)),
                                        MediaInfo.Chapter(title: "", start: .seconds(2), end: nil)],
                             lyrics: .text("[00:01.00]One\nTwo"), series: "Discworld ü", seriesPart: "2.5")
        var unreadable = full
        unreadable.lyrics = .unreadable("a SYLT frame: not UTF-8")
        unreadable.series = nil  // a part without a series, as a file may have
        unreadable.seriesPart = "0"
        let empty = MediaInfo(duration: nil, title: nil, artists: [], album: nil, albumArtist: nil, genre: nil,
                              trackNumber: nil, discNumber: nil, hasAudio: false, cover: nil, chapters: [])
        let replies: [MediaReaderWire.Reply] = [.info(full), .info(unreadable), .info(empty), .error(.notFound("a")), .error(.unreadable("")),
                                                .error(.notAudio("c")), .error(.failed("d")),
                                                .loudness(LoudnessMeasurement(integrated: -23.25, peak: 0.5)),
                                                .loudness(LoudnessMeasurement(integrated: nil, peak: 0))]
        for reply in replies {
            let message = MediaReaderWire.encode(reply)
            let payload = Array(message.dropFirst(4))
            #expect(message.prefix(4) == [UInt8(payload.count & 0xFF), UInt8(payload.count >> 8 & 0xFF), 0, 0])
            #expect(MediaReaderWire.decodeReply(payload) == reply)
            for cut in 0..<payload.count {
                #expect(MediaReaderWire.decodeReply(Array(payload.prefix(cut))) == nil, "\(reply) cut at \(cut)")
            }
            #expect(MediaReaderWire.decodeReply(payload + [0]) == nil)
        }
        let request = MediaReaderWire.Request(uri: "file:///a%20b.ogg", timeoutMilliseconds: 5000)
        let requestPayload = Array(MediaReaderWire.encode(request).dropFirst(4))
        #expect(MediaReaderWire.decodeRequest(requestPayload) == request)
        #expect(MediaReaderWire.speaksThisProtocol(requestPayload))
        // A book's files to measure; a read of two files is nonsense.
        let measure = MediaReaderWire.Request(kind: .loudness, uris: ["file:///1.ogg", "file:///2%20b.ogg"], timeoutMilliseconds: 60_000)
        #expect(MediaReaderWire.decodeRequest(Array(MediaReaderWire.encode(measure).dropFirst(4))) == measure)
        let readTwo = MediaReaderWire.Request(kind: .read, uris: ["file:///1.ogg", "file:///2.ogg"], timeoutMilliseconds: 1)
        #expect(MediaReaderWire.decodeRequest(Array(MediaReaderWire.encode(readTwo).dropFirst(4))) == nil)
        var otherVersion = requestPayload
        otherVersion[0] &+= 1
        #expect(!MediaReaderWire.speaksThisProtocol(otherVersion))
        #expect(MediaReaderWire.decodeRequest(otherVersion) == nil)
        // A count of artists larger than the message, a kind that does not exist, text that is not UTF-8.
        var huge = Array(MediaReaderWire.encode(.info(empty)).dropFirst(4))
        huge.replaceSubrange(20..<28, with: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F])
        #expect(MediaReaderWire.decodeReply(huge) == nil)
        #expect(MediaReaderWire.decodeReply([9, 0, 0, 0, 0, 0, 0, 0]) == nil)
        #expect(MediaReaderWire.decodeReply([1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0xC3, 0x28]) == nil)
    }
}
