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
        guard state.status == .playing, !engineReady, !needsReload, let since = loadingSince,
              now() - since >= Self.loadLimit else { return }
        let file = state.current?.url.path ?? "-"
        if loadRetried {
            loadRetried = false
            loadingSince = nil
            handle(.failed("did not start: loading it stalled twice"))
        } else {
            logger.warning("a file did not start; loading it again", metadata: ["file": "\(file)"])
            let at = positionClock.position()
            load(orderPosition: orderPosition, at: at)
            loadRetried = true
        }
    }

    /// Whether `position` is in the last second of the current file: where a stream that stands still is waiting
    /// for the next one.
    func isAtEndOfFile(_ position: Duration) -> Bool {
        state.current?.duration.map { position >= $0 - .seconds(1) } ?? false
    }

    /// Called every tick while playing: a position that stands still for ``stallLimit`` is a stall (no error
    /// came, no end of stream: a frozen "Playing"). At the end of a file with a next one set, the next file is
    /// what never started (a stream GStreamer hangs on during the gapless handover): it is skipped as if it had
    /// failed. Anywhere else the file or the output is stuck: the player pauses where it was and says so;
    /// Play loads the file again.
    func watchForStall(_ enginePosition: Duration?) {
        guard let standing, standing.position == enginePosition else {
            standing = (enginePosition, now())
            return
        }
        guard now() - standing.since >= Self.stallLimit else { return }
        self.standing = nil
        let at = enginePosition ?? positionClock.position()
        if let target = pendingNext, target != orderPosition, isAtEndOfFile(at) {
            handle(.nextFailed(state.queue[order[target]].url,
                               "did not start: playback stood still at the end of the file before it"))
            return
        }
        let message = "playback stood still for \(Self.stallLimit) at \(at) of the file: paused"
        logger.error("playback stalled", metadata: ["file": "\(state.current?.url.path ?? "-")", "position": "\(at)"])
        engine.pause()  // should the pipeline come unstuck, it must not play on under a "Paused"
        engineReady = false
        needsReload = true
        setStatus(.paused)
        positionClock.set(PositionClock(anchor: at))
        state.lastError = message
        publish()
    }
}
