"""Write the sample corpus: four fictional documents about one made-up product and its policies.

    python examples/build_corpus.py [OUT_DIR]    # default: examples/corpus/

Generating the corpus keeps it free of third-party text. Every run yields byte-identical
files (fixed dates and IDs), so content hashes stay stable for the pipeline and the tests.
examples/questions.md lists questions this corpus answers, with the section of each answer.
"""

from __future__ import annotations

import io
import sys
import zipfile
from datetime import datetime
from pathlib import Path

from docx import Document
from docx.document import Document as DocxDocument
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.platypus import (
    Flowable,
    KeepTogether,
    ListFlowable,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

DEFAULT_OUT_DIR = Path(__file__).resolve().parent / "corpus"

# One fixed timestamp for every piece of metadata, so reruns do not change any bytes.
FIXED_DATETIME = datetime(2024, 3, 15, 9, 0, 0)
ZIP_DATE_TIME = FIXED_DATETIME.timetuple()[:6]

SPEC_HEADER = "ASHC Specification v2.1"


# --------------------------------------------------------------------------- PDF


def _pdf_styles() -> dict[str, ParagraphStyle]:
    """Headings shrink with depth, so a layout-based parser can recover the levels."""
    body = ParagraphStyle("body", fontName="Helvetica", fontSize=10, leading=13.5, spaceAfter=6)
    # keepWithNext stops a heading from being stranded at the bottom of a page.
    heading = ParagraphStyle("heading", fontName="Helvetica-Bold", keepWithNext=1)
    return {
        "title": ParagraphStyle(
            "title", fontName="Helvetica-Bold", fontSize=22, leading=27, spaceAfter=8
        ),
        "subtitle": ParagraphStyle(
            "subtitle", fontName="Helvetica", fontSize=13, leading=17, spaceAfter=4
        ),
        "h1": ParagraphStyle(
            "h1", parent=heading, fontSize=16, leading=20, spaceBefore=14, spaceAfter=6
        ),
        "h2": ParagraphStyle(
            "h2", parent=heading, fontSize=13, leading=16, spaceBefore=10, spaceAfter=5
        ),
        "h3": ParagraphStyle(
            "h3", parent=heading, fontSize=11, leading=14, spaceBefore=8, spaceAfter=4
        ),
        "body": body,
        "caption": ParagraphStyle(
            "caption", parent=body, fontName="Helvetica-Oblique", fontSize=9, spaceAfter=3
        ),
        "cell": ParagraphStyle("cell", fontName="Helvetica", fontSize=8.5, leading=10.5),
        "cell_head": ParagraphStyle("cell_head", fontName="Helvetica-Bold", fontSize=8.5),
    }


def _bullets(items: list[str], style: ParagraphStyle, numbered: bool = False) -> ListFlowable:
    paragraphs = [Paragraph(item, style) for item in items]
    marker = {"bulletFontName": style.fontName, "bulletFontSize": style.fontSize}
    if numbered:
        return ListFlowable(paragraphs, bulletType="1", bulletFormat="%s.", leftIndent=16, **marker)
    return ListFlowable(paragraphs, bulletType="bullet", start="\u2022", leftIndent=14, **marker)


def _table(
    caption: str,
    rows: list[list[str]],
    col_widths: list[float],
    styles: dict[str, ParagraphStyle],
) -> KeepTogether:
    """A captioned grid table with a bold header row, kept on one page with its caption."""
    header, *body = rows
    data = [[Paragraph(text, styles["cell_head"]) for text in header]]
    data += [[Paragraph(text, styles["cell"]) for text in row] for row in body]
    table = Table(data, colWidths=[w * mm for w in col_widths], repeatRows=1, hAlign="LEFT")
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.5, colors.black),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#D9D9D9")),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ]
        )
    )
    return KeepTogether([Paragraph(caption, styles["caption"]), table, Spacer(1, 8)])


def _spec_flowables(s: dict[str, ParagraphStyle]) -> list[Flowable]:
    def h1(text: str) -> Paragraph:
        return Paragraph(text, s["h1"])

    def h2(text: str) -> Paragraph:
        return Paragraph(text, s["h2"])

    def h3(text: str) -> Paragraph:
        return Paragraph(text, s["h3"])

    def p(text: str) -> Paragraph:
        return Paragraph(text, s["body"])

    return [
        Paragraph("Acme Serial Host Controller (ASHC)", s["title"]),
        Paragraph("Register and Programming Specification, Version 2.1", s["subtitle"]),
        Paragraph("Document ASHC-SPEC-021, March 2024, Acme Semiconductor Ltd.", s["subtitle"]),
        p(
            "<i>This specification describes a fictional product. It was written for the "
            "rag_assets sample corpus and contains no third-party material.</i>"
        ),
        h1("1 Introduction"),
        p(
            "The Acme Serial Host Controller (ASHC) is a host controller block that connects "
            "a 32-bit system bus to SD memory cards, SDIO devices and eMMC devices. Software "
            "controls the ASHC through a set of memory-mapped 32-bit registers and moves data "
            "either by programmed I/O through the data port or by one of the built-in DMA "
            "engines. Version 2.1 adds the ADMA3 engine and the DDR52 bus speed mode."
        ),
        h2("1.1 Scope"),
        p(
            "This document specifies the register map, the reset and clock control "
            "sequences, and the DMA programming model of ASHC version 2.1. It does not "
            "describe the SD or eMMC card protocols, the electrical characteristics of the "
            "pads, or the Linux driver. Driver installation and configuration are covered by "
            "the separate ASHC Driver Operator Guide."
        ),
        h2("1.2 Features"),
        p("ASHC version 2.1 provides the following features:"),
        _bullets(
            [
                "Compatible with SD 3.0, SDIO 3.0 and eMMC 4.51 devices.",
                "1-bit, 4-bit and 8-bit data bus widths.",
                "Three DMA engines: SDMA, ADMA2 and ADMA3.",
                "Card clock of up to 52 MHz in High Speed and DDR52 modes.",
                "Two 512-byte data buffers used in ping-pong fashion.",
                "Card Detect and Write Protect inputs with a 32 ms debounce filter.",
            ],
            s["body"],
        ),
        _table(
            "Table 1: Supported Bus Speed Modes",
            [
                ["Mode", "Bus Width", "Max Clock", "Max Throughput", "Signaling"],
                ["Identification", "1-bit", "400 kHz", "n/a", "3.3 V"],
                ["Default Speed", "1-bit, 4-bit", "26 MHz", "13 MB/s", "3.3 V"],
                ["High Speed", "1-bit, 4-bit, 8-bit", "52 MHz", "52 MB/s", "3.3 V or 1.8 V"],
                ["DDR52 (eMMC only)", "4-bit, 8-bit", "52 MHz", "104 MB/s", "1.8 V"],
            ],
            [38, 34, 24, 32, 32],
            s,
        ),
        h2("1.3 Conventions"),
        p("The register descriptions in this document use the following conventions:"),
        _bullets(
            [
                "Bit ranges are written high:low, so bits 15:8 are the second least "
                "significant byte of a register.",
                "<b>RO</b> fields are read-only; writes to them are ignored.",
                "<b>RW</b> fields can be read and written by software.",
                "<b>RW1C</b> fields are cleared by writing 1; writing 0 has no effect.",
                "Reset values are given in hexadecimal unless marked as binary (0b).",
            ],
            s["body"],
        ),
        h1("2 Register Map"),
        p(
            "All registers are 32 bits wide and must be accessed with aligned 32-bit reads "
            "and writes. Offsets are relative to the ASHC base address, which is assigned by "
            "the system integrator. Offsets not listed in Table 2 are reserved: they read as "
            "zero and writes to them are ignored."
        ),
        _table(
            "Table 2: Register Summary",
            [
                ["Offset", "Register", "Access", "Reset Value"],
                ["0x00", "SDMA System Address Register", "RW", "0x00000000"],
                ["0x04", "Host Control Register", "RW", "0x00000E00"],
                ["0x08", "Interrupt Status Register", "RW1C", "0x00000000"],
                ["0x0C", "Interrupt Enable Register", "RW", "0x00000000"],
                ["0x10", "Clock Control Register", "RW", "0x00000000"],
                ["0x14", "Present State Register", "RO", "0x000A0000"],
                ["0x18", "Capabilities Register", "RO", "0x0169680A"],
                ["0x2C", "Software Reset Register", "RW", "0x00000000"],
                ["0x30", "ADMA Descriptor Address Register", "RW", "0x00000000"],
                ["0xFC", "Version Register", "RO", "0x00020001"],
            ],
            [20, 70, 22, 30],
            s,
        ),
        h2("2.1 Host Control Register"),
        p(
            "The Host Control Register at offset 0x04 selects the data bus width, the bus "
            "speed mode and the DMA engine, and holds the data timeout setting. Software "
            "should change it only while no command or data transfer is in progress."
        ),
        _table(
            "Table 3: Host Control Register (Offset 0x04)",
            [
                ["Bits", "Field", "Access", "Reset", "Description"],
                ["31:16", "Reserved", "RO", "0x0000", "Reserved. Reads return 0."],
                [
                    "15:8",
                    "Timeout Counter Value",
                    "RW",
                    "0x0E",
                    "Data timeout, as a power of two of TMCLK cycles. See 2.1.1.",
                ],
                [
                    "7:6",
                    "DMA Select",
                    "RW",
                    "0b00",
                    "00 = SDMA, 01 = Reserved, 10 = ADMA2, 11 = ADMA3.",
                ],
                [
                    "5",
                    "High Speed Enable",
                    "RW",
                    "0",
                    "1 = High Speed mode, card clock up to 52 MHz.",
                ],
                [
                    "4",
                    "Stop at Block Gap Request",
                    "RW",
                    "0",
                    "1 = pause the data transfer at the next Block Gap.",
                ],
                ["3", "Reserved", "RO", "0", "Reserved. Reads return 0."],
                [
                    "2:1",
                    "Data Transfer Width",
                    "RW",
                    "0b00",
                    "00 = 1-bit, 01 = 4-bit, 10 = 8-bit, 11 = Reserved.",
                ],
                ["0", "LED Control", "RW", "0", "1 = drive the activity LED output."],
            ],
            [14, 38, 16, 16, 86],
            s,
        ),
        h3("2.1.1 Timeout Counter"),
        p(
            "Bits 15:8 of the Host Control Register hold the Timeout Counter Value (TCV). "
            "The data timeout is TMCLK &times; 2<super>13+TCV</super> cycles, where TMCLK is "
            "the timeout clock reported in the Capabilities Register. Valid values are 0x00 "
            "to 0x0E; values 0x0F to 0xFF are reserved and must not be programmed. At the "
            "reset value of 0x0E and a 48 MHz TMCLK the timeout is about 2.8 seconds."
        ),
        p(
            "When the counter expires before the card responds, the controller sets Data "
            "Timeout Error (bit 20 of the Interrupt Status Register) and stops the transfer."
        ),
        h3("2.1.2 Data Transfer Width"),
        p(
            "Bits 2:1 select the width of the DAT bus. The 8-bit setting is valid only for "
            "eMMC devices; selecting it with an SD card attached results in Data CRC Errors. "
            "Software must set the card to the same width with the card's own bus width "
            "command before it changes this field."
        ),
        h2("2.2 Interrupt Status Register"),
        p(
            "The Interrupt Status Register at offset 0x08 reports normal events in bits 15:0 "
            "and error events in bits 31:16. A status bit is set only if the matching bit in "
            "the Interrupt Enable Register (offset 0x0C) is 1. Status bits are RW1C: software "
            "clears a bit by writing 1 to it."
        ),
        _table(
            "Table 4: Interrupt Status Register (Offset 0x08)",
            [
                ["Bits", "Field", "Access", "Reset", "Description"],
                ["31:26", "Reserved", "RO", "0", "Reserved. Reads return 0."],
                ["25", "ADMA Error", "RW1C", "0", "An ADMA descriptor was invalid."],
                ["24", "Auto CMD Error", "RW1C", "0", "Auto CMD12 or Auto CMD23 failed."],
                ["23", "Current Limit Error", "RW1C", "0", "Card supply exceeded its limit."],
                ["22", "Data End Bit Error", "RW1C", "0", "End bit of read data was 0."],
                ["21", "Data CRC Error", "RW1C", "0", "CRC mismatch on the DAT lines."],
                ["20", "Data Timeout Error", "RW1C", "0", "The Timeout Counter expired."],
                ["19:16", "Reserved", "RO", "0", "Reserved. Reads return 0."],
                ["15", "Error Interrupt", "RO", "0", "1 = at least one of bits 25:20 is set."],
                ["14:9", "Reserved", "RO", "0", "Reserved. Reads return 0."],
                ["8", "Card Interrupt", "RO", "0", "An SDIO card raised an interrupt."],
                ["7", "Card Removal", "RW1C", "0", "Card Detect changed to removed."],
                ["6", "Card Insertion", "RW1C", "0", "Card Detect changed to inserted."],
                ["5:3", "Reserved", "RO", "0", "Reserved. Reads return 0."],
                ["2", "Block Gap Event", "RW1C", "0", "Transfer paused at a Block Gap."],
                ["1", "Transfer Complete", "RW1C", "0", "The data transfer finished."],
                ["0", "Command Complete", "RW1C", "0", "The card response was received."],
            ],
            [14, 38, 16, 14, 88],
            s,
        ),
        h1("3 Operation"),
        h2("3.1 Initialization"),
        p("After power-up, software brings the controller into service in this order:"),
        _bullets(
            [
                "Wait at least 1 ms after the supply voltage is stable.",
                "Perform a full software reset as described in 3.2.",
                "Set the card clock to 400 kHz or lower for card identification (see 3.3).",
                "Enable the required interrupts in the Interrupt Enable Register.",
                "Program the Timeout Counter Value in the Host Control Register.",
                "After identification, raise the card clock, set High Speed Enable if the card "
                "supports it, and select the data transfer width.",
            ],
            s["body"],
            numbered=True,
        ),
        h2("3.2 Reset Sequence"),
        p(
            "The Software Reset Register at offset 0x2C provides three self-clearing reset "
            "bits: bit 0 Software Reset for All (SRA), bit 1 Software Reset for CMD Line and "
            "bit 2 Software Reset for DAT Line. Writing 1 to SRA resets every register except "
            "the Version Register and aborts any transfer in progress."
        ),
        p(
            "A full reset takes 10 ms to complete. The controller clears the SRA bit when the "
            "reset is done, so software polls the bit at intervals of no less than 100 "
            "&micro;s and reports a reset failure if it is still set after 100 ms. Software "
            "must not write any other register while the reset is in progress. A CMD Line or "
            "DAT Line reset completes within 1 ms and preserves the Card Detect state."
        ),
        h2("3.3 Clock Control"),
        p(
            "The card clock (SDCLK) is derived from the base clock, which is 104 MHz in the "
            "reference configuration. Bits 15:8 of the Clock Control Register (offset 0x10) "
            "hold the divisor N, and SDCLK = base clock / (2 &times; N). The maximum card "
            "clock is 52 MHz, reached with N = 1 in High Speed or DDR52 mode; in Default "
            "Speed mode the card clock must not exceed 26 MHz."
        ),
        p(
            "To change the frequency, software first clears SD Clock Enable (bit 2), writes "
            "the new divisor, waits until Internal Clock Stable (bit 1) reads 1, and then sets "
            "SD Clock Enable again. The internal clock becomes stable within 150 &micro;s."
        ),
        h2("3.4 ADMA Transfers"),
        p(
            "In ADMA2 and ADMA3 modes the controller fetches 64-bit descriptors from a "
            "descriptor table in system memory whose address is written to the ADMA "
            "Descriptor Address Register (offset 0x30). The table must be aligned to an "
            "8-byte boundary. Each descriptor moves up to 65,536 bytes; a length field of 0 "
            "means 65,536. The attribute bits of a descriptor are:"
        ),
        _bullets(
            [
                "<b>Valid</b> (bit 0): the descriptor may be executed.",
                "<b>End</b> (bit 1): this is the last descriptor of the transfer.",
                "<b>Int</b> (bit 2): raise an interrupt when the descriptor completes.",
                "<b>Act</b> (bits 5:4): 00 = No operation, 10 = Transfer data, "
                "11 = Link to another descriptor table.",
            ],
            s["body"],
        ),
        p(
            "A descriptor without the Valid bit, or a link to an unaligned table, stops the "
            "engine and sets ADMA Error (bit 25 of the Interrupt Status Register)."
        ),
        h2("3.5 Error Recovery"),
        p(
            "When any error bit in bits 25:20 of the Interrupt Status Register is set, "
            "software clears the error bits, resets the CMD and DAT lines through bits 1 and "
            "2 of the Software Reset Register, and sends an abort command to the card. A "
            "failed transfer may be retried up to 3 times before it is reported as an I/O "
            "error."
        ),
        h1("4 Power Management"),
        h2("4.1 Supply Voltages"),
        p(
            "The ASHC supports 3.3 V and 1.8 V signaling. Before switching the signaling "
            "voltage from 3.3 V to 1.8 V, software stops SDCLK and keeps it stopped for at "
            "least 5 ms so that the pad supply settles."
        ),
        h2("4.2 Low-Power Operation"),
        p(
            "With Auto Clock Gating enabled, the controller gates its internal clocks after "
            "256 SDCLK cycles without bus activity. A register access or a card interrupt "
            "wakes it up within 20 &micro;s; no software action is required."
        ),
        h1("5 Glossary"),
        *[
            p(f"<b>{term}:</b> {definition}")
            for term, definition in [
                (
                    "ADMA",
                    "Advanced DMA. A scatter-gather DMA engine that reads transfer "
                    "descriptors from a table in system memory.",
                ),
                (
                    "Block Gap",
                    "The interval between two consecutive data blocks on the DAT lines, "
                    "during which a transfer can be paused.",
                ),
                (
                    "Card Detect",
                    "The input signal, and the matching Present State Register bit, that "
                    "indicates whether a card is inserted.",
                ),
                ("DAT lines", "The 1, 4 or 8 data signals between the controller and the card."),
                (
                    "RW1C",
                    "Read, write 1 to clear. An access type for status bits that software "
                    "clears by writing 1.",
                ),
                (
                    "SDCLK",
                    "The clock the controller drives to the card, derived from the base "
                    "clock by the divisor in the Clock Control Register.",
                ),
                (
                    "SDMA",
                    "Simple DMA. A DMA engine that transfers one contiguous buffer and "
                    "interrupts at each buffer boundary.",
                ),
                ("TMCLK", "The timeout clock that drives the Timeout Counter."),
            ]
        ],
    ]


def _draw_page_furniture(canvas, doc) -> None:
    """Running header and page-number footer, drawn on every page."""
    width, height = A4
    canvas.saveState()
    canvas.setFont("Helvetica", 8)
    canvas.drawString(20 * mm, height - 12 * mm, SPEC_HEADER)
    canvas.drawRightString(width - 20 * mm, height - 12 * mm, "Acme Semiconductor Ltd.")
    canvas.setLineWidth(0.5)
    canvas.line(20 * mm, height - 14 * mm, width - 20 * mm, height - 14 * mm)
    canvas.drawCentredString(width / 2, 10 * mm, f"Page {doc.page}")
    canvas.restoreState()


def write_spec_pdf(path: Path) -> None:
    doc = SimpleDocTemplate(
        str(path),
        pagesize=A4,
        leftMargin=20 * mm,
        rightMargin=20 * mm,
        topMargin=22 * mm,
        bottomMargin=20 * mm,
        title="Acme Serial Host Controller (ASHC) Specification v2.1",
        author="Acme Semiconductor Ltd.",
        subject="Register and Programming Specification",
        creator="rag_assets examples/build_corpus.py",
        # Fixed creation date and document ID instead of the current time.
        invariant=1,
    )
    doc.build(
        _spec_flowables(_pdf_styles()),
        onFirstPage=_draw_page_furniture,
        onLaterPages=_draw_page_furniture,
    )


# ---------------------------------------------------------------------- Markdown

OPERATOR_GUIDE = """\
# ASHC Driver Operator Guide

This guide explains how to install, configure and troubleshoot the Linux driver and the
`ashcd` management daemon for the Acme Serial Host Controller (ASHC) version 2.1. Register
details are in the ASHC Specification v2.1.

## Installation

### Requirements

- Linux kernel 6.1 or later, built with `CONFIG_MMC=y`.
- The `ashc-tools` package, version 2.1 or later, which provides `ashcd` and `ashcctl`.
- Root access to load kernel modules.

### Loading the driver

Load the module and check that the controller was found:

```bash
# Load the driver with its default settings
sudo modprobe ashc
## Confirm that the controller registered a host
dmesg | grep ashc
# Start the management daemon at boot
sudo systemctl enable --now ashcd
```

## Configuration

### Module parameters

Module parameters are set in `/etc/modprobe.d/ashc.conf` and take effect when the module
is next loaded.

| Parameter | Default | Description |
|-----------|---------|-------------|
| `max_clock_khz` | 52000 | Upper limit for the card clock, in kHz. |
| `timeout_tcv` | 14 | Timeout Counter Value written to the Host Control Register. |
| `dma_mode` | `adma2` | One of `sdma`, `adma2` or `adma3`. |
| `retries` | 3 | Retries for a failed transfer before an I/O error is reported. |

For example, to force SDMA and a 26 MHz clock limit:

```bash
# /etc/modprobe.d/ashc.conf
options ashc dma_mode=sdma max_clock_khz=26000
```

### Debug logging

Debug logging is off by default. To enable it, set the environment variable
`ASHC_LOG_LEVEL=debug` before starting `ashcd`, for example in a systemd drop-in:

```bash
sudo systemctl edit ashcd
# Add these two lines in the editor, then save:
# [Service]
# Environment=ASHC_LOG_LEVEL=debug
sudo systemctl restart ashcd
```

The daemon writes its log to `/var/log/ashc/ashcd.log`. The file is rotated when it reaches
10 MB, and the last 5 rotated files are kept. Set `ASHC_LOG_LEVEL=info` again when you are
done, because debug logging records every register access.

## Monitoring

The `ashc` Python bindings, installed with `ashc-tools`, read the controller state through
the daemon:

```python
# Print the current Host Control Register and any pending errors
import ashc

host = ashc.open("/dev/ashc0")
# The Host Control Register is at offset 0x04
print(hex(host.read_register(0x04)))
print(host.pending_errors())
```

## Troubleshooting

### Card not detected

1. Check that the card is fully inserted; Card Detect is debounced for 32 ms.
2. Run `ashcctl status` and check the `card_present` field.
3. If the field stays `false`, reset the controller (see below).

### Data timeout errors

Repeated `data timeout` messages usually mean that the card is slower than the configured
timeout. Raise `timeout_tcv`, but never above 14: higher values are reserved by the
hardware.

### Resetting the controller

`ashcctl reset --all` performs a full software reset and waits up to 100 ms for it to
finish. Use `ashcctl reset --cmd` or `ashcctl reset --dat` to reset a single line without
losing the card state.
"""


def write_operator_guide(path: Path) -> None:
    path.write_text(OPERATOR_GUIDE, encoding="utf-8", newline="\n")


# --------------------------------------------------------------- Markdown (Chinese)

REMOTE_WORK_POLICY = """\
# Acme 半导体有限公司远程办公管理办法

编号 HR-12，自 2024 年 4 月 1 日起施行。本办法为虚构文件，专为 rag_assets 示例语料编写。

## 第一章 总则

第一条 为规范远程办公，保障信息安全和工作效率，制定本办法。

第二条 本办法适用于公司全体正式员工。实习生和外包人员的远程办公由其所在部门另行规定。

第三条 远程办公以自愿申请为原则，经直属经理批准后方可实施。

## 第二章 申请与审批

第四条 员工每周远程办公不得超过三天。试用期内的员工不得申请远程办公。

第五条 员工应当至少提前两个工作日通过人力资源系统提交远程办公申请，注明远程办公的日期和地点。

第六条 直属经理应当在一个工作日内审批。连续远程办公超过十个工作日的，还须经部门总监批准。

## 第三章 工作要求

第七条 远程办公期间，员工应当在核心工作时间上午十点至下午四点保持在线，并在十五分钟内回复工作消息。

第八条 员工须通过公司 VPN 访问内部系统，不得使用公共无线网络处理机密资料。

第九条 公司配发的笔记本电脑须开启全盘加密，锁屏时间不得超过五分钟。

## 第四章 设备与补贴

第十条 公司按月发放远程办公补贴，标准如下表：

| 项目 | 标准 | 说明 |
|------|------|------|
| 网络补贴 | 每月 100 元 | 每月远程办公满四天方可领取 |
| 电费补贴 | 每月 50 元 | 与网络补贴一并发放 |
| 显示器 | 一次性 800 元 | 入职满一年的员工可申请一次 |
| 办公椅 | 一次性 600 元 | 须提供发票 |

第十一条 员工离职时，应当在最后工作日前归还公司配发的全部设备。

## 第五章 附则

第十二条 违反本办法第八条或第九条的，公司可以暂停其远程办公资格三个月。

第十三条 本办法由人力资源部负责解释。
"""


def write_remote_work_policy(path: Path) -> None:
    path.write_text(REMOTE_WORK_POLICY, encoding="utf-8", newline="\n")


# -------------------------------------------------------------------------- DOCX


def _build_travel_policy() -> DocxDocument:
    doc = Document()
    props = doc.core_properties
    props.title = "Travel and Expenses Policy"
    props.author = "Acme Semiconductor Ltd. Finance"
    props.last_modified_by = "Acme Semiconductor Ltd. Finance"
    props.revision = 1
    props.created = props.modified = props.last_printed = FIXED_DATETIME

    doc.add_heading("Acme Semiconductor Ltd. Travel and Expenses Policy", level=0)
    doc.add_paragraph(
        "Policy TP-07, effective 1 April 2024. Owner: Finance. This policy is fictional and "
        "was written for the rag_assets sample corpus."
    )

    doc.add_heading("1. Purpose", level=1)
    doc.add_paragraph(
        "This policy sets out how employees book business travel and claim travel expenses, "
        "so that travel is safe, cost-effective and treated the same way for everyone."
    )

    doc.add_heading("2. Scope", level=1)
    doc.add_paragraph(
        "The policy applies to all employees and contractors who travel on company business. "
        "Travel paid for by a customer follows the customer's rules where they are stricter."
    )

    doc.add_heading("3. Booking", level=1)
    doc.add_paragraph(
        "All travel is booked through the company travel portal at least 14 days before "
        "departure, unless the trip is urgent and approved by the employee's manager."
    )
    doc.add_heading("3.1 Flights", level=2)
    doc.add_paragraph(
        "Employees fly economy class for flights under 6 hours. For flights of 6 hours or "
        "more, premium economy may be booked. Business class requires written approval from "
        "a Vice President."
    )
    doc.add_heading("3.2 Hotels", level=2)
    doc.add_paragraph(
        "The maximum hotel rate is EUR 180 per night in capital cities and EUR 140 per night "
        "elsewhere, including breakfast where it is offered."
    )
    doc.add_heading("3.3 Rail and Car Hire", level=2)
    doc.add_paragraph(
        "Rail is preferred over flying for journeys under 4 hours. Rail travel is booked in "
        "standard class. Hire cars are limited to the compact category."
    )

    doc.add_heading("4. Meal Allowances", level=1)
    doc.add_paragraph(
        "Meals are reimbursed up to the daily allowance for the city where the employee "
        "stays. Amounts are in euros (EUR) per meal; breakfast is not paid when it is "
        "included in the hotel rate."
    )
    doc.add_paragraph("Table 1: Daily meal allowance per city (EUR)", style="Caption")
    allowances = [
        ("City", "Breakfast", "Lunch", "Dinner"),
        ("Amsterdam", "18", "30", "45"),
        ("Berlin", "15", "25", "40"),
        ("London", "20", "32", "50"),
        ("Munich", "16", "28", "42"),
        ("Paris", "19", "30", "48"),
        ("Other cities", "12", "20", "35"),
    ]
    table = doc.add_table(rows=len(allowances), cols=len(allowances[0]))
    table.style = "Table Grid"
    for row, values in zip(table.rows, allowances, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    for cell in table.rows[0].cells:
        cell.paragraphs[0].runs[0].bold = True

    doc.add_heading("5. Expense Claims", level=1)
    doc.add_paragraph("When claiming expenses, employees must follow these rules:")
    for rule in [
        "Submit claims within 30 days of returning from the trip.",
        "Attach an itemised receipt for every expense over EUR 25.",
        "Private car use is reimbursed at EUR 0.30 per kilometre.",
        "Alcohol, minibar charges and traffic fines are not reimbursed.",
    ]:
        doc.add_paragraph(rule, style="List Bullet")

    doc.add_heading("6. Exceptions", level=1)
    doc.add_paragraph(
        "Exceptions to this policy need written approval from the Finance Director before "
        "the trip. Expenses that break the policy without approval are not reimbursed."
    )
    return doc


def _with_fixed_zip_dates(docx_bytes: bytes) -> bytes:
    """Rewrite the docx zip with fixed entry timestamps; python-docx stamps the current time."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(docx_bytes)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            dst.writestr(
                zipfile.ZipInfo(info.filename, date_time=ZIP_DATE_TIME),
                src.read(info.filename),
                compress_type=zipfile.ZIP_DEFLATED,
            )
    return out.getvalue()


def write_travel_policy(path: Path) -> None:
    buffer = io.BytesIO()
    _build_travel_policy().save(buffer)
    path.write_bytes(_with_fixed_zip_dates(buffer.getvalue()))


# -------------------------------------------------------------------------- main


def build_corpus(out_dir: Path) -> list[Path]:
    """Write the documents into out_dir and return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    writers = {
        "host-controller-spec.pdf": write_spec_pdf,
        "operator-guide.md": write_operator_guide,
        "remote-work-policy-zh.md": write_remote_work_policy,
        "travel-policy.docx": write_travel_policy,
    }
    paths = []
    for name, write in writers.items():
        path = out_dir / name
        write(path)
        paths.append(path)
    return paths


def main(argv: list[str]) -> None:
    out_dir = Path(argv[1]) if len(argv) > 1 else DEFAULT_OUT_DIR
    for path in build_corpus(out_dir):
        print(f"{path}  {path.stat().st_size} bytes")


if __name__ == "__main__":
    main(sys.argv)
