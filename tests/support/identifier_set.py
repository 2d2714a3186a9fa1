"""A generated identifier set (issue 34): short bilingual documents that each hold one code,
number or name, many of one shape, and queries that each name exactly one of them.

The documents of a family share one template, so the dense channel sees them as near
duplicates (E-1042 and E-1024 embed alike); only the identifier tells them apart, which is
what BM25 is kept for. Deterministic for a seed; every identifier occurs in one document only.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

ZH_SURNAMES = "王李张刘陈杨黄赵周吴徐孙马朱胡郭何林罗高梁宋郑谢韩唐冯于董萧程曹袁邓许傅沈曾彭吕"
ZH_GIVEN = "建国伟敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华玉兰芳志红春晓云飞鹏宇浩然子涵梓萱欣怡"
EN_FIRST = ("Rosalind", "Tobias", "Amara", "Henrik", "Leticia", "Oswin", "Priya", "Casimir",
            "Ingrid", "Mateo", "Soren", "Yolanda", "Desmond", "Ottilie", "Ravi", "Beatrix",
            "Lucian", "Marisol", "Anselm", "Greta")
EN_LAST = ("Okonkwo", "Halvorsen", "Quintero", "Abernathy", "Vasquez", "Lindqvist", "Moreau",
           "Kowalczyk", "Achterberg", "Nakashima", "Oyelaran", "Fairweather", "Castellanos",
           "Whitlock", "Brandvold", "Szymanski", "Delacroix", "Kristiansen", "Mbeki", "Ferreira",
           "Galloway", "Tremblay", "Van der Berg", "Ishikawa", "Petrakis", "Ramdhani", "Obuya",
           "Lindgren", "Carrington", "Esposito", "Haverkamp", "Zielinski", "Montague",
           "Aucoin", "Bellweather", "Drummond", "Eriksen", "Gudmundsson", "Hollister",
           "Jablonski", "Keane", "Lachance", "Mortensen", "Novak", "Pellegrini")
PRODUCTS = ("Falcon", "Orion", "Vega", "Atlas", "Nimbus", "Kestrel", "Aurora", "Titan")
DEPTS_ZH = ("财务部", "研发部", "市场部", "法务部", "采购部", "客服部")
DEPTS_EN = ("finance", "engineering", "marketing", "legal", "procurement", "support")
SYMPTOMS_ZH = ("磁盘配额已满", "上传令牌过期", "数据库连接超时", "证书校验失败", "内存不足")
SYMPTOMS_EN = ("the disk quota is full", "the upload token expired", "the database connection "
               "timed out", "certificate validation failed", "the service ran out of memory")


# shared sentences around the identifier: a real document mentions its code once among text
# like its neighbours', so the identifier is a small part of what the dense channel embeds
FILLER_ZH = ("本文档由运维与业务团队共同维护，内容每季度复核一次。",
             "如有疑问，请在工作时间联系对应部门的值班同事。",
             "相关记录保存在内部系统中，保留期限为三年。",
             "处理过程中请遵守公司的信息安全规定，不要外传截图。",
             "变更前请先在测试环境验证，并在变更单中写明回退方案。",
             "每月的汇总报告会列出本类事项的数量和平均处理时长。")
FILLER_EN = ("This page is maintained jointly by the operations and business teams and reviewed "
             "every quarter.", "If anything is unclear, contact the on-duty colleague of the "
             "team named here during office hours.", "Records are kept in the internal system "
             "for three years.", "Follow the information security rules while handling it and "
             "do not share screenshots outside the company.", "Verify every change in the test "
             "environment first and describe the rollback plan in the change request.",
             "The monthly summary lists how many such items there were and how long they took.")
SIBLINGS = 0.6  # the share of identifiers drawn one edit away from an earlier one


@dataclass(frozen=True, slots=True)
class IdDocument:
    name: str  # a file name, unique
    text: str


@dataclass(frozen=True, slots=True)
class IdQuery:
    id: str
    text: str
    relevant: str  # the name of the one relevant document
    family: str
    lang: str  # "zh" or "en"


# family -> (identifier maker, zh document, en document, zh questions, en questions)
Maker = Callable[[random.Random], str]


def _error(r: random.Random) -> str:
    return f"E-{r.randint(1000, 1999)}"


def _sku(r: random.Random) -> str:
    return f"SKU-{r.choice('ABCDK')}{r.choice('XYZ')}-{r.randint(10000, 99999)}"


def _ticket(r: random.Random) -> str:
    return f"INC{r.randint(1000000, 9999999)}"


def _contract(r: random.Random) -> str:
    return f"HT-{r.randint(2019, 2024)}-{r.randint(1000, 9999)}"


def _version(r: random.Random) -> str:
    return f"v{r.randint(1, 4)}.{r.randint(0, 30)}.{r.randint(0, 19)}"


def _order(r: random.Random) -> str:
    year, month, day = r.randint(2019, 2024), r.randint(1, 12), r.randint(1, 28)
    return f"{year}{month:02d}{day:02d}{r.randint(0, 9999):04d}"


def _zh_name(r: random.Random) -> str:
    return r.choice(ZH_SURNAMES) + r.choice(ZH_GIVEN) + r.choice(ZH_GIVEN)


def _en_name(r: random.Random) -> str:
    return f"{r.choice(EN_FIRST)} {r.choice(EN_LAST)}"


def _product(r: random.Random) -> str:
    return f"{r.choice(PRODUCTS)} {r.choice('XRSM')}{r.randint(100, 999)}"


FAMILIES: dict[str, tuple[Maker, str, str, tuple[str, ...], tuple[str, ...]]] = {
    "error_code": (
        _error,
        "错误码 {id}：{symptom_zh}。处理方法：检查{dept_zh}的服务配置后重试，"
        "仍失败请联系运维值班。",
        "Error {id}: {symptom_en}. Fix: check the {dept_en} service settings and retry; if it "
        "still fails, page the on-call operator.",
        ("{id}", "错误码 {id} 怎么处理？"), ("{id}", "What does error {id} mean?")),
    "sku": (
        _sku,
        "商品 {id}：{dept_zh}采购的办公设备，单价 {price} 元，库存 {stock} 件，由华东仓发货。",
        "Item {id}: office equipment bought by {dept_en}, unit price {price} dollars, {stock} in "
        "stock, shipped from the east warehouse.",
        ("{id}", "{id} 的单价是多少？"), ("{id}", "What is the price of item {id}?")),
    "ticket": (
        _ticket,
        "工单 {id}：用户报告{symptom_zh}，已由{dept_zh}受理，优先级 P{prio}，预计两天内解决。",
        "Ticket {id}: a user reports that {symptom_en}; assigned to {dept_en}, priority P{prio}, "
        "expected to be resolved within two days.",
        ("{id}", "工单 {id} 的进展如何？"), ("{id}", "What is the status of ticket {id}?")),
    "contract": (
        _contract,
        "合同编号 {id}：{dept_zh}与供应商签订的年度服务合同，金额 {price} 万元，到期前三十天续签。",
        "Contract {id}: the yearly service contract between {dept_en} and a supplier, worth "
        "{price} thousand dollars, renewed thirty days before it expires.",
        ("{id}", "合同 {id} 的金额是多少？"), ("{id}", "How much is contract {id} worth?")),
    "version": (
        _version,
        "固件 {id} 发布说明：修复了{symptom_zh}的问题，建议{dept_zh}的设备在本周内升级。",
        "Firmware {id} release notes: fixes the case where {symptom_en}; {dept_en} devices "
        "should upgrade this week.",
        ("{id}", "固件 {id} 修复了什么？"), ("{id}", "What does firmware {id} fix?")),
    "order": (
        _order,
        "订单号 {id}：{dept_zh}下单的办公用品，共 {stock} 件，金额 {price} 元，已发货。",
        "Order {id}: office supplies ordered by {dept_en}, {stock} items, {price} dollars, "
        "shipped.",
        ("{id}", "订单 {id} 发货了吗？"), ("{id}", "Has order {id} shipped?")),
    "zh_name": (
        _zh_name,
        "员工档案：{id}，就职于{dept_zh}，负责供应商对接与合同审核，入职 {stock} 个月。",
        "Staff profile: {id} works in {dept_en}, handles supplier contacts and contract "
        "reviews, and joined {stock} months ago.",
        ("{id}", "{id}在哪个部门？"), ("{id}", "Which department is {id} in?")),
    "en_name": (
        _en_name,
        "员工档案：{id}，就职于{dept_zh}，负责供应商对接与合同审核，入职 {stock} 个月。",
        "Staff profile: {id} works in {dept_en}, handles supplier contacts and contract "
        "reviews, and joined {stock} months ago.",
        ("{id}", "{id} 在哪个部门工作？"), ("{id}", "Which team does {id} work in?")),
    "product": (
        _product,
        "产品 {id} 路由器：支持双频 Wi-Fi，{dept_zh}推荐型号，保修 {stock} 个月，售价 {price} 元。",
        "The {id} router: dual-band Wi-Fi, recommended by {dept_en}, {stock} months of "
        "warranty, {price} dollars.",
        ("{id}", "{id} 的保修期多长？"), ("{id}", "How long is the warranty of the {id}?")),
}


def _sibling(r: random.Random, identifier: str, family: str) -> str:
    """An identifier of the same shape one edit away (E-1042 -> E-1048; 张建国 -> 张建华;
    Rosalind Okonkwo -> Rosalind Moreau): the confusable neighbours real KBs are full of."""
    if family == "zh_name":
        return identifier[:2] + r.choice(ZH_GIVEN)
    if family == "en_name":
        return f"{identifier.split()[0]} {r.choice(EN_LAST)}"
    digits = [i for i, c in enumerate(identifier) if c.isdigit()]
    at = r.choice(digits)
    digit = r.choice("0123456789".replace(identifier[at], ""))
    return identifier[:at] + digit + identifier[at + 1:]


def _draw(r: random.Random, kin: list[str], family: str, make: Maker) -> str:
    """Most identifiers have a neighbour of the same shape one edit away in another document."""
    return _sibling(r, r.choice(kin), family) if kin and r.random() < SIBLINGS else make(r)


def _fields(r: random.Random, identifier: str) -> dict[str, str]:
    dept = r.randrange(len(DEPTS_ZH))
    symptom = r.randrange(len(SYMPTOMS_ZH))
    return {"id": identifier, "dept_zh": DEPTS_ZH[dept], "dept_en": DEPTS_EN[dept],
            "symptom_zh": SYMPTOMS_ZH[symptom], "symptom_en": SYMPTOMS_EN[symptom],
            "price": str(r.randint(12, 9800)), "stock": str(r.randint(2, 60)),
            "prio": str(r.randint(1, 4))}


def generate(
    documents: int = 360, queries: int = 90, seed: int = 34,
) -> tuple[list[IdDocument], list[IdQuery]]:
    """`documents` documents spread over the families round-robin, half Chinese and half
    English, and `queries` queries (every other one a bare identifier, the rest questions;
    the question's language is the document's) over distinct documents."""
    if documents < len(FAMILIES) or not 0 < queries <= documents:
        raise ValueError("need at least one document per family and 0 < queries <= documents")
    r = random.Random(seed)
    names = list(FAMILIES)
    used: set[str] = set()
    docs: list[IdDocument] = []
    owners: list[tuple[str, str, str]] = []  # (identifier, family, lang) per document
    for index in range(documents):
        family = names[index % len(names)]
        make, zh, en, _, _ = FAMILIES[family]
        kin = [known for known, of, _ in owners if of == family]
        identifier = _draw(r, kin, family, make)
        while identifier in used:  # every identifier names exactly one document
            identifier = _draw(r, kin, family, make)
        used.add(identifier)
        lang = "zh" if (index // len(names)) % 2 == 0 else "en"
        filler = r.sample(FILLER_ZH if lang == "zh" else FILLER_EN, 3)
        head = (zh if lang == "zh" else en).format(**_fields(r, identifier))
        text = (filler[0] + head + filler[1] + filler[2]) if lang == "zh" else " ".join(
            (filler[0], head, filler[1], filler[2]))
        docs.append(IdDocument(f"{family}-{index:04d}.txt", text))
        owners.append((identifier, family, lang))
    picked = sorted(r.sample(range(documents), queries))
    out: list[IdQuery] = []
    for number, index in enumerate(picked):
        identifier, family, lang = owners[index]
        _, _, _, zh_forms, en_forms = FAMILIES[family]
        forms = zh_forms if lang == "zh" else en_forms
        text = forms[number % 2].format(id=identifier)
        out.append(IdQuery(f"q{number:03d}", text, docs[index].name, family, lang))
    return docs, out
