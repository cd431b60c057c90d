/// The watchdogs that end a frozen "Playing" (no error, no end of stream, nothing moving): a position that stands
/// still, and a load that never completes. `tick()` runs them every ``tickInterval``, on the injected clock.
extension Player {
    /// How long the engine's position may stand still while playing before the player calls playback stalled.
    static let stallLimit = Duration.seconds(5)
    /// How long a load may take before the player loads the file again (a local file prerolls in milliseconds).
    static let loadLimit = Duration.seconds(3)

    /// Called every tick while playing and the engine has not reported ready: a load that never completes (no
    /// preroll, no error) is a frozen "Playing" too. The first time the file is loaded again where it was; if that
    /// stalls as well, the file is given up like one that failed, and the next one plays.
    func watchForStuckLoad() {
        guard state.status == .playing, case .loading(let since, let retried) = engineLoad,
              now() - since >= Self.loadLimit else { return }
        let file = state.current?.url.path ?? "-"
        if retried {
            handle(.failed("did not start: loading it stalled twice"))
        } else {
            logger.warning("a file did not start; loading it again", metadata: ["file": "\(file)"])
            let at = clockPosition
            load(orderPosition: order.position, at: at)
            engineLoad = .loading(since: now(), retried: true)
        }
    }

    /// How long the position may stand still at the end of a file whose successor the engine was given before the
    /// player goes on with that successor itself: a gapless handover happens at the end, not later.
    static let handoverLimit = Duration.milliseconds(250)

    /// Whether `position` is in the last second of the current file: where a stream that stands still is waiting
    /// for the next one.
    func isAtEndOfFile(_ position: Duration) -> Bool {
        state.current?.duration.map { position >= $0 - .seconds(1) } ?? false
    }

    /// Called every tick and by the wake-up planned just past the end of a file (``scheduleWake()``): a position
    /// that stands still for ``handoverLimit`` at the end of a file (within ``handoverLimit`` of its duration), with
    /// a next one handed to the engine, means the handover did not happen. After a next file that failed
    /// (``EngineEvent/nextFailed(_:_:)``; then anywhere in the last second) that is expected (playbin waits for the
    /// stream that failed): the file after it is loaded. Otherwise GStreamer hangs
    /// on the next file without an error (Ogg's demuxer pauses for good on a truncated file about one time in a
    /// hundred, measured), or the next file is slow to open (a disk spinning up): it is loaded the ordinary way,
    /// where a damaged file fails with an error and a slow one plays. Returns whether it moved on.
    func watchForHandover(_ enginePosition: Duration?) -> Bool {
        guard state.status == .playing, engineReady, advanceAtEndOfFile || pendingNext != nil,
              let at = enginePosition, isAtEndOfFile(at) else { return false }
        // Without a failure, only a position at the very end counts: elsewhere in the last second, a standstill
        // can be a seek landing, or a sink still playing the previous file's sound (a short file just started).
        if !advanceAtEndOfFile, let duration = state.current?.duration, at < duration - Self.handoverLimit {
            return false
        }
        guard let standing, standing.position == at else {
            standing = (at, now())
            return false
        }
        guard now() - standing.since >= Self.handoverLimit else { return false }
        self.standing = nil
        if advanceAtEndOfFile {
            advancePastFailedNext()
        } else if let target = pendingNext {
            logger.warning("the next file did not start at the end of the one before; loading it",
                           metadata: ["file": "\(state.queue[order[target]].url.path)"])
            load(orderPosition: target, at: state.fileStart(ofItem: order[target]))
            chapterEnded()
        }
        return true
    }

    /// Called every tick while playing: a position that stands still for ``stallLimit`` is a stall (no error
    /// came, no end of stream: a frozen "Playing"), the file or the output stuck (at the end of a file with a next
    /// one, ``watchForHandover(_:)`` acts first). The player pauses where it was and says so; Play loads the file
    /// again.
    func watchForStall(_ enginePosition: Duration?) {
        guard let standing, standing.position == enginePosition else {
            standing = (enginePosition, now())
            return
        }
        guard now() - standing.since >= Self.stallLimit else { return }
        self.standing = nil
        let at = enginePosition ?? clockPosition
        let message = "playback stood still for \(Self.stallLimit) at \(at) of the file: paused"
        logger.error("playback stalled", metadata: ["file": "\(state.current?.url.path ?? "-")", "position": "\(at)"])
        engine.pause()  // should the pipeline come unstuck, it must not play on under a "Paused"
        engineLoad = .lost
        setStatus(.paused)
        setClock(at: at)
        state.lastError = message
        publish()
    }
}
