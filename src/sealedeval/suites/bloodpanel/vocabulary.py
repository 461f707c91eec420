"""Synonyms the ``sealed`` profile accepts for each pre-registered term.

Keys are terms as the answer key spells them, after ``matching.normalize`` (lower case, American
spelling, hyphens turned into spaces). Values are regular-expression fragments in the same
normalised form; a term matches when any fragment matches between word boundaries. A term with
no entry matches itself (and a plural ``s``/``es``). Every fragment starts with a literal of at
least two characters: the matcher finds candidates with a plain substring search on that
literal and runs the regular expression only there, which is what keeps grading 100,000 reports
fast (a test enforces the rule).

Why a table and not fuzzy matching: a synonym list is reviewable and sealed with the rubric;
edit distance would let "hepatitis" match "hepatic" and "sle" match "sale". Why the exclusions:
``ckd(?! epi)`` because "CKD-EPI" names an equation, not a disease, and ``normal`` needs word
boundaries so that "abnormal" is not "normal" (lower-case substring matching, as in the
published scorer, gets both wrong).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

_ANTIBODY = r"(?: antibod(?:y|ies)| ab| abs)?"

SYNONYMS: Final = MappingProxyType(
    {
        # --- diagnostic keywords of the curated cases -------------------------------------------
        "iron deficiency anemia": (
            r"iron deficiency anemias?",
            r"iron deficient anemia",
            r"anemia of iron deficiency",
            r"sideropenic anemia",
        ),
        "ferritin": (r"ferritin",),
        "mcv": (r"mcv", r"mean corpuscular volume", r"mean cell volume"),
        "rdw": (r"rdw(?: cv| sd)?", r"red (?:blood )?cell distribution width"),
        "hashimoto": (
            r"hashimoto(?:'s)?",
            r"chronic lymphocytic thyroiditis",
            r"chronic autoimmune thyroiditis",
        ),
        "thyroiditis": (r"thyroiditis",),
        "anti tpo": (
            r"anti ?tpo" + _ANTIBODY,
            r"tpo" + _ANTIBODY,
            r"tpoab",
            r"anti ?thyroid peroxidase" + _ANTIBODY,
            r"thyroid peroxidase antibod(?:y|ies)",
        ),
        "tsh": (r"tsh", r"thyroid stimulating hormone", r"thyrotropin"),
        "hypothyroid": (r"hypothyroid(?:ism)?", r"underactive thyroid"),
        "type 2 diabetes": (
            r"type (?:2|ii|two) diabetes(?: mellitus)?",
            r"t2dm",
            r"t2d",
            r"type (?:2|ii) dm",
            r"diabetes mellitus(?:,)? type (?:2|ii|two)",
            r"type (?:2|ii|two) diabetic",
        ),
        "metabolic syndrome": (
            r"metabolic syndrome",
            r"syndrome x",
            r"insulin resistance syndrome",
        ),
        "hba1c": (
            r"hba1c",
            r"hb a1c",
            r"a1c",
            r"glycated hemoglobin",
            r"glycosylated hemoglobin",
            r"hemoglobin a1c",
        ),
        "insulin resistance": (r"insulin resistan(?:ce|t)",),
        "nafld": (
            r"nafld",
            r"masld",
            r"mafld",
            r"non ?alcoholic fatty liver(?: disease)?",
            r"metabolic dysfunction associated (?:steatotic|fatty) liver(?: disease)?",
        ),
        "fatty liver": (
            r"fatty liver",
            r"hepatic steatosis",
            r"steatotic liver",
            r"liver steatosis",
        ),
        "steatohepatitis": (r"steatohepatitis", r"nash", r"mash"),
        "chronic kidney disease": (
            r"chronic kidney disease",
            r"ckd(?! epi)",
            r"chronic renal disease",
            r"chronic renal insufficiency",
        ),
        "egfr": (
            r"egfr",
            r"estimated glomerular filtration rate",
            r"estimated gfr",
            r"glomerular filtration rate",
            r"gfr",
        ),
        "albuminuria": (r"albuminuria", r"microalbuminuria", r"macroalbuminuria"),
        "b12": (r"b12", r"b 12", r"cobalamin", r"cyanocobalamin"),
        "megaloblastic": (r"megaloblast(?:ic|osis)",),
        "macrocytic": (r"macrocyt(?:ic|osis)",),
        "homocysteine": (r"homocyste(?:ine|inemia)", r"hyperhomocysteinemia"),
        "thalassemia": (r"thalassemi(?:a|as|c)",),
        "hba2": (r"hba2", r"hb a2", r"hemoglobin a2"),
        "electrophoresis": (r"electrophoresis", r"hplc", r"hemoglobin fractionation"),
        "microcytic": (r"microcyt(?:ic|osis)",),
        "pcos": (r"pcos", r"pcod", r"polycystic ovar(?:y|ian) (?:syndrome|disease)"),
        "polycystic": (r"polycystic",),
        "hyperandrogenism": (r"hyperandrogen(?:ism|emia)", r"androgen excess"),
        "acute hepatitis": (r"acute (?:viral )?hepatitis(?: [abe])?",),
        "transaminase": (r"transaminases?", r"aminotransferases?", r"transaminitis"),
        "hepatocellular": (r"hepatocellular",),
        "viral": (r"viral", r"virus(?:es)?"),
        "dyslipidemia": (
            r"dyslipidemias?",
            r"hyperlipidemias?",
            r"hypercholesterolemias?",
            r"hyperlipoproteinemias?",
        ),
        "cardiovascular risk": (
            r"cardiovascular (?:disease )?risk",
            r"cv risk",
            r"ascvd risk",
            r"risk of (?:atherosclerotic )?cardiovascular (?:disease|events?)",
        ),
        "ldl": (r"ldl(?: c| cholesterol| p)?", r"low density lipoprotein"),
        "apob": (r"apob", r"apo b", r"apo b100", r"apolipoprotein b(?: 100)?"),
        "lupus": (r"lupus",),
        "sle": (r"sle", r"systemic lupus erythematosus"),
        "autoimmune": (r"autoimmun(?:e|ity)",),
        "anti dsdna": (
            r"anti ?dsdna" + _ANTIBODY,
            r"anti ?ds dna" + _ANTIBODY,
            r"dsdna" + _ANTIBODY,
            r"anti double stranded dna" + _ANTIBODY,
            r"double stranded dna" + _ANTIBODY,
        ),
        "complement": (r"complements?", r"hypocomplementemi(?:a|c)"),
        "vitamin d": (
            r"vitamin d[23]?",
            r"25 ?(?:\(oh\)|oh|hydroxy) ?(?:vitamin )?d[23]?",
            r"25 hydroxyvitamin d[23]?",
            r"calcidiol",
        ),
        "hyperparathyroidism": (r"hyperparathyroidism", r"shpt"),
        "calcium": (r"calcium", r"hypocalcemi(?:a|c)"),
        "pth": (r"pth", r"ipth", r"i pth", r"parathyroid hormone", r"parathormone"),
        "hyperuricemia": (r"hyperuricemi(?:a|c)",),
        "gout": (r"gout", r"gouty"),
        "uric acid": (r"uric acid", r"urate"),
        "gilbert": (r"gilbert(?:'s)?", r"meulengracht"),
        "unconjugated": (r"unconjugated", r"indirect hyperbilirubinemia"),
        "benign": (r"benign",),
        "normal": (r"normal",),
        "unremarkable": (r"unremarkable",),
        "within reference": (
            r"within (?:the |their |its |all )?(?:respective )?(?:laboratory )?(?:reference|normal)"
            r"(?: \w+)? (?:ranges?|limits?|intervals?)",
            r"within reference",
        ),
        "healthy": (r"healthy",),
        # --- scoring systems ----------------------------------------------------------------------
        "mentzer": (r"mentzer(?:'s)?",),
        "fib 4": (r"fib ?4",),
        "homa ir": (
            r"homa ?ir",
            r"homa",
            r"homeostatic model assessment(?: of insulin resistance)?",
            r"homeostasis model assessment(?: of insulin resistance)?",
        ),
        "ascvd": (r"ascvd", r"pooled cohort equations?", r"pce"),
        "ckd epi": (r"ckd ?epi",),
        "kdigo": (r"kdigo",),
        "eular": (r"eular",),
        "slicc": (r"slicc",),
        "de ritis": (r"de ?ritis", r"ast ?/ ?alt ratio", r"ast to alt ratio", r"ast:alt ratio"),
        # --- over-diagnosis (trap) flags ---------------------------------------------------------
        "hepatitis": (r"hepatitis", r"hepatitides"),
        "cirrhosis": (r"cirrhos[ie]s", r"cirrhotic"),
        "hemolytic anemia": (r"hemolytic anemias?", r"hemolysis", r"hemolytic process"),
        "liver failure": (r"liver failure", r"hepatic failure", r"liver insufficiency"),
        "liver disease": (
            r"liver diseases?",
            r"hepatic diseases?",
            r"hepatopathy",
            r"liver damage",
            r"liver injury",
            r"hepatocellular injury",
        ),
        "biliary obstruction": (
            r"biliary obstruction",
            r"bile duct obstruction",
            r"obstructive jaundice",
            r"cholestasis",
            r"cholestatic",
        ),
        "diabetes": (r"diabetes(?: mellitus)?", r"diabetic", r"t2dm", r"t2d"),
        "anemia": (r"anemias?", r"anemic"),
        "hypothyroidism": (r"hypothyroid(?:ism)?", r"underactive thyroid"),
        "kidney disease": (
            r"kidney diseases?",
            r"renal diseases?",
            r"ckd(?! epi)",
            r"nephropathy",
            r"renal (?:impairment|insufficiency|failure)",
            r"kidney failure",
        ),
        "deficiency": (r"deficienc(?:y|ies)", r"deficient"),
        # --- extra archetypes of the synthetic cohort ---------------------------------------------
        "anemia of chronic disease": (
            r"anemia of (?:chronic (?:disease|inflammation)|inflammation)",
            r"inflammatory anemia",
        ),
        "graves": (r"graves(?:'s)?(?: disease)?", r"basedow"),
        "hyperthyroid": (r"hyperthyroid(?:ism)?", r"thyrotoxicosis", r"overactive thyroid"),
        "trab": (
            r"trab",
            r"tsh receptor antibod(?:y|ies)",
            r"thyrotropin receptor antibod(?:y|ies)",
            r"tsi",
        ),
        "prediabetes": (r"pre ?diabetes", r"impaired fasting glucose", r"ifg"),
        "alcohol": (r"alcohol(?:ic)?", r"ethanol"),
        "alcohol related liver disease": (
            r"alcohol(?:ic| related| associated) liver disease",
            r"ald",
            r"alcoholic hepatitis",
            r"alcoholic steatohepatitis",
        ),
        "rheumatoid arthritis": (r"rheumatoid arthritis", r"ra"),
        "anti ccp": (
            r"anti ?ccp" + _ANTIBODY,
            r"acpa",
            r"anti citrullinated protein antibod(?:y|ies)",
        ),
        "rheumatoid factor": (r"rheumatoid factor", r"rf"),
        "exercise": (r"exercise(?: induced| related)?", r"exertion(?:al)?", r"strenuous training"),
        "creatine kinase": (r"creatine kinase", r"ck", r"cpk", r"creatine phosphokinase"),
        "muscle": (r"muscles?", r"muscular", r"skeletal muscle"),
        "rhabdomyolysis": (r"rhabdomyolysis",),
        "myositis": (r"myositis", r"myopathy", r"inflammatory myopath(?:y|ies)"),
        "kidney injury": (r"kidney injury", r"acute kidney injury", r"aki", r"renal failure"),
        "familial hypercholesterolemia": (r"familial hypercholesterolemia", r"fh"),
    }
)
