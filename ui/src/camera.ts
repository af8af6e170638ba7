/**
 * The laptop camera as a scanner: frames go through a canvas, become luma bytes and are
 * decoded by the gate (`decode_frame`). Fails with a message a person can act on when
 * there is no camera (a server, Xvfb) or access is refused.
 */

import { cameraProblem } from "./logic/camera";
import { captureSize, lumaFrame } from "./logic/frame";

/** Between two decoded frames (ms): enough for a ticket held up, light on the CPU. */
const FRAME_GAP_MS = 200;

/** Some engines never answer when there is no camera at all; don't wait forever. */
const START_TIMEOUT_MS = 10_000;

export class CameraUnavailable extends Error {}

class Timeout extends Error {
  override name = "TimeoutError";
}

function withTimeout<T>(p: Promise<T>, ms: number, late: (v: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new Timeout("no answer"));
    }, ms);
    p.then(
      (v) => {
        if (done) late(v);
        else {
          done = true;
          clearTimeout(timer);
          resolve(v);
        }
      },
      (e: unknown) => {
        if (!done) {
          done = true;
          clearTimeout(timer);
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      },
    );
  });
}

export interface CameraSession {
  stop(): void;
}

/**
 * Shows the camera in `video` and calls `onCodes` with the QR texts of each frame that
 * has any. Rejects with a `CameraUnavailable` whose message says why.
 */
export async function startCamera(
  video: HTMLVideoElement,
  decode: (frame: Uint8Array) => Promise<string[]>,
  onCodes: (codes: string[]) => void,
  onError: (message: string) => void,
): Promise<CameraSession> {
  const media = typeof navigator === "undefined" ? undefined : navigator.mediaDevices;
  if (media === undefined || typeof media.getUserMedia !== "function") {
    throw new CameraUnavailable(
      "This computer offers no camera to the app. Use a barcode scanner or type the code.",
    );
  }
  let stream: MediaStream;
  try {
    stream = await withTimeout(
      media.getUserMedia({
        video: { facingMode: "environment", width: { ideal: 1280 }, height: { ideal: 720 } },
        audio: false,
      }),
      START_TIMEOUT_MS,
      // A stream that comes after we gave up must not keep the camera light on.
      (late) => {
        for (const t of late.getTracks()) t.stop();
      },
    );
  } catch (e) {
    throw new CameraUnavailable(cameraProblem(e));
  }
  video.srcObject = stream;
  video.muted = true;
  video.playsInline = true;
  try {
    await video.play();
  } catch (e) {
    for (const t of stream.getTracks()) t.stop();
    throw new CameraUnavailable(cameraProblem(e));
  }

  const canvas = document.createElement("canvas");
  const g = canvas.getContext("2d", { willReadFrequently: true });
  let stopped = false;
  // A function, not the variable: `stop()` may run while a frame is being decoded.
  const live = (): boolean => !stopped;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;

  const grab = async (): Promise<void> => {
    if (!live()) return;
    const size = captureSize(video.videoWidth, video.videoHeight);
    if (g !== null && size !== null) {
      canvas.width = size.width;
      canvas.height = size.height;
      g.drawImage(video, 0, 0, size.width, size.height);
      const pixels = g.getImageData(0, 0, size.width, size.height);
      try {
        const codes = await decode(lumaFrame(pixels.data, size.width, size.height));
        failures = 0;
        if (live() && codes.length > 0) onCodes(codes);
      } catch (e) {
        failures += 1;
        // One bad frame is noise; a decoder that keeps failing is worth saying.
        if (failures === 5) onError(`Reading the camera failed: ${String(e)}`);
      }
    }
    if (live()) timer = setTimeout(() => void grab(), FRAME_GAP_MS);
  };
  timer = setTimeout(() => void grab(), FRAME_GAP_MS);

  return {
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      for (const t of stream.getTracks()) t.stop();
      video.srcObject = null;
    },
  };
}
