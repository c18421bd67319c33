#!/usr/bin/env python3
"""A reference WebRTC link through the home-network lab's lines: aiortc, the Python stack.

    python3 lab/aiortc_link.py offer  DIR STUN_URL   (in the host's home)
    python3 lab/aiortc_link.py answer DIR STUN_URL   (in the joining player's home)

The two sides trade their session descriptions through files in DIR (both homes' processes
run on this machine), so the signalling takes no time on the lines: what is timed is the link
itself. Each side opens two data channels as vimp's transport does (one reliable and ordered,
one unordered with no retransmissions, both negotiated out of band), then the answering side
says a hello on the reliable channel and the offering side answers it (vimp's hello → welcome).

The answering side prints one JSON line: the milliseconds from the offer in hand to its local
description set (`answer_ms`, candidates gathered with STUN), to ICE connected (`ice_ms`), to
DTLS and SCTP up and both channels open (`channels_ms`), and to the answer of its hello
(`welcome_ms`). `scripts/lab-aiortc.sh` runs it N times at a line profile and sums it up.
Needs aiortc (`pip install aiortc`).
"""
import asyncio
import json
import os
import sys
import time

from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription


async def wait_file(path, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            if text.endswith("\n"):
                return text
        await asyncio.sleep(0.002)
    raise TimeoutError(path)


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.rename(tmp, path)


def channels(pc):
    reliable = pc.createDataChannel("reliable", negotiated=True, id=0, ordered=True)
    unreliable = pc.createDataChannel("unreliable", negotiated=True, id=1, ordered=False, maxRetransmits=0)
    return reliable, unreliable


async def opened(*chans):
    for ch in chans:
        if ch.readyState != "open":
            done = asyncio.get_running_loop().create_future()
            ch.on("open", lambda d=done: d.done() or d.set_result(True))
            await done


async def offer(d, stun):
    pc = RTCPeerConnection(RTCConfiguration([RTCIceServer(stun)]))
    reliable, unreliable = channels(pc)

    @reliable.on("message")
    def on_message(message):
        if message == "hello":
            reliable.send("welcome")

    await pc.setLocalDescription(await pc.createOffer())
    write_file(os.path.join(d, "offer"), json.dumps({"sdp": pc.localDescription.sdp, "type": "offer"}))
    answer = json.loads(await wait_file(os.path.join(d, "answer")))
    await pc.setRemoteDescription(RTCSessionDescription(**answer))
    await wait_file(os.path.join(d, "done"), timeout=60)
    await pc.close()


async def answer(d, stun):
    pc = RTCPeerConnection(RTCConfiguration([RTCIceServer(stun)]))
    reliable, unreliable = channels(pc)
    marks = {}
    start = None

    @pc.on("iceconnectionstatechange")
    def on_ice():
        if pc.iceConnectionState in ("connected", "completed") and "ice_ms" not in marks:
            marks["ice_ms"] = (time.monotonic() - start) * 1000

    welcomed = asyncio.get_running_loop().create_future()

    @reliable.on("message")
    def on_message(message):
        if message == "welcome" and not welcomed.done():
            welcomed.set_result(True)

    remote = json.loads(await wait_file(os.path.join(d, "offer")))
    start = time.monotonic()
    await pc.setRemoteDescription(RTCSessionDescription(**remote))
    await pc.setLocalDescription(await pc.createAnswer())
    marks["answer_ms"] = (time.monotonic() - start) * 1000
    write_file(os.path.join(d, "answer"), json.dumps({"sdp": pc.localDescription.sdp, "type": "answer"}))
    try:
        await asyncio.wait_for(opened(reliable, unreliable), 20)
        marks["channels_ms"] = (time.monotonic() - start) * 1000
        # Said again every second until answered, as vimp's hello is.
        while not welcomed.done():
            reliable.send("hello")
            try:
                await asyncio.wait_for(asyncio.shield(welcomed), 1.0)
            except asyncio.TimeoutError:
                pass
        marks["welcome_ms"] = (time.monotonic() - start) * 1000
    except asyncio.TimeoutError:
        marks["failed"] = True
    print(json.dumps(marks), flush=True)
    write_file(os.path.join(d, "done"), "1")
    await pc.close()


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("offer", "answer"):
        sys.exit(__doc__)
    role, d, stun = sys.argv[1:]
    asyncio.run(offer(d, stun) if role == "offer" else answer(d, stun))


if __name__ == "__main__":
    main()
