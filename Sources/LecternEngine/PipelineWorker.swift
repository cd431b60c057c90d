import Foundation
import GStreamer
import Synchronization

/// The one thread that builds a playbin and makes every call on it, in the order the engine queued them: state
/// changes, seeks, the URI, the gapless slot, the volume. Whoever queues a call returns at once; nothing waits for
/// this thread. A call that never returns (GStreamer 1.22's playbin can deadlock in a state change after a failed
/// gapless next stream: docs/decisions/gstreamer-hangs.md) blocks this thread alone; the engine's watchdog then
/// gives the worker up and starts another with a new playbin.
///
/// ```swift
/// let worker = PipelineWorker(generation: 1, audioSink: nil, sound: .init(), next: nil, host: engineCore)
/// worker.enqueue([.load(url, number: 1)])
/// ```
// @unchecked Sendable: `playbin` is touched only on the worker's own thread (built there, used there, released
// there); `queue` is a Mutex and `wake` a semaphore.
final class PipelineWorker: @unchecked Sendable {
    typealias Call = PlaybinStateMachine.Call

    private enum Job {
        case call(Call)
        case quit
    }

    /// The playbin's number: its bus events and call reports carry it, so a given-up playbin's are told apart.
    let generation: Int
    private let host: any PipelineHost
    private let queue = Mutex<[Job]>([])
    private let wake = DispatchSemaphore(value: 0)
    /// Only on the worker thread.
    private var playbin: Playbin?

    init(generation: Int, audioSink: String?, sound: PlaybinStateMachine.Sound, next: URL?, host: any PipelineHost) {
        self.generation = generation
        self.host = host
        let thread = Thread { [self] in
            Thread.current.name = "lectern-gst-cmd"  // from inside, 15 bytes at most (Foundation on Linux)
            run(audioSink: audioSink, sound: sound, next: next)
        }
        thread.start()
    }

    /// Queues calls behind those already queued; returns at once.
    func enqueue(_ calls: [Call]) {
        guard !calls.isEmpty else { return }
        queue.withLock { $0.append(contentsOf: calls.map(Job.call)) }
        for _ in calls { wake.signal() }
    }

    /// Drops what is queued; the thread releases its playbin and ends.
    func quit() {
        queue.withLock { $0 = [.quit] }
        wake.signal()
    }

    /// Drops what is queued, and keeps the playbin for good: the call the thread is blocked in may never return,
    /// and releasing a playbin sets NULL, which would block as it did. Should that call return after all, the
    /// thread sets the playbin to NULL (so it can't play on unseen) and ends.
    func abandon() {
        queue.withLock { $0 = [] }
    }

    private func run(audioSink: String?, sound: PlaybinStateMachine.Sound, next: URL?) {
        let generation = generation
        let host = host
        do throws(PipelineError) {
            let built = try Playbin(audioSink: audioSink, streamProperties: GStreamerEngine.streamProperties) { event, control in
                host.handle(event, control: control, generation: generation)
            }
            Self.set(sound, on: built)
            built.nextURI = next?.absoluteString
            playbin = built
            host.built(.success(built.control), generation: generation)
        } catch {
            host.built(.failure(error), generation: generation)
        }
        while true {
            wake.wait()
            let job = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            switch job {
            case nil: continue  // dropped by abandon() or quit()
            case .quit?:
                playbin = nil
                return
            case .call(let call)?:
                guard let playbin else { continue }  // the build failed: the engine has reported it
                if !perform(call, on: playbin) {
                    playbin.control.setState(.null)
                    _ = Unmanaged.passRetained(playbin)  // given up: see abandon()
                    return
                }
            }
        }
    }

    /// Makes one call; false when the engine gave this playbin up while it was in a call.
    private func perform(_ call: Call, on playbin: Playbin) -> Bool {
        let control = playbin.control
        switch call {
        case .load(let url, let number):
            // NULL (synchronous) drops the old stream; the bus is flushed too, so the old stream's messages are
            // gone and the next NULL→READY is this load's.
            guard bounded("going to NULL to load \(url.lastPathComponent)", { control.setState(.null) }) else { return false }
            guard host.loadStarted(number, generation: generation) else { return true }
            playbin.uri = url.absoluteString
            return bounded("going to PAUSED to load \(url.lastPathComponent)", { control.setState(.paused) })
        case .setState(let state):
            return bounded("going to \(state)", { control.setState(state) })
        case .seek(let position, let rate, let purpose):
            if case .move(let number) = purpose { control.markSeek(number) }
            var accepted = false
            guard bounded("a seek", { accepted = control.seek(to: position, rate: rate) }) else { return false }
            host.seekDone(purpose, accepted: accepted, control: control, generation: generation)
            return true
        case .setNext(let url):
            playbin.nextURI = url?.absoluteString
            return true
        case .setSound(let sound):
            Self.set(sound, on: playbin)
            return true
        }
    }

    /// Up to 1, the volume is the playbin's own (the sound server's stream volume behind a pulsesink), so that at
    /// 100 % and below, with no loudness gain, not a sample is changed before the output; the volume above 1 and the
    /// loudness gain go to the audio filter's gain stage, whose limiter keeps every sample from clipping.
    /// Skip silence goes to the audio filter's last stage.
    private static func set(_ sound: PlaybinStateMachine.Sound, on playbin: Playbin) {
        playbin.volume = min(sound.volume, 1)
        playbin.gain = max(sound.volume, 1) * sound.gain
        playbin.compressor = sound.compressor
        playbin.skipSilence = sound.skipSilence.map { SilenceSkipping(threshold: $0.threshold, amount: $0.amount) }
    }

    /// Runs a call that may block, with the host's watchdog on it; false when the playbin was given up meanwhile.
    private func bounded(_ what: String, _ call: () -> Void) -> Bool {
        let ticket = host.callStarted(what, generation: generation)
        call()
        return host.callEnded(ticket, generation: generation)
    }
}

/// The engine side of a ``PipelineWorker``: what the thread reports, on the thread itself (or the playbin's bus
/// thread for `handle`). Every method returns quickly.
protocol PipelineHost: Sendable {
    /// The playbin was built (once per worker), or could not be.
    func built(_ result: Result<PlaybinControl, PipelineError>, generation: Int)
    /// A bus event of this worker's playbin, on its bus thread.
    func handle(_ event: PlaybinEvent, control: PlaybinControl, generation: Int)
    /// A call that may block begins: the host arms its watchdog. Returns a ticket for `callEnded`.
    func callStarted(_ what: String, generation: Int) -> Int
    /// The call returned; false when the playbin was given up meanwhile.
    func callEnded(_ ticket: Int, generation: Int) -> Bool
    /// Load `number` went to NULL; false when it is outdated and goes no further.
    func loadStarted(_ number: Int, generation: Int) -> Bool
    func seekDone(_ purpose: PlaybinStateMachine.SeekPurpose, accepted: Bool, control: PlaybinControl, generation: Int)
}
